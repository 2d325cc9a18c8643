// Runs the console's statement splitter (assets/sql.js) over the server's
// quoting cases and prints what it finds, for TestSplitCases:
//
//   node testdata/split.mjs ../../sql/splittest/cases.json
//
// Offsets are turned from UTF-16 code units into UTF-8 bytes, the server's.
import { readFileSync } from 'node:fs';

const src = readFileSync(new URL('../assets/sql.js', import.meta.url), 'utf8');
const { split } = await import('data:text/javascript,' + encodeURIComponent(src));
const cases = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const enc = new TextEncoder();
const out = cases.map((c) => split(c.text).map((s) => ({
  pos: enc.encode(c.text.slice(0, s.start)).length,
  text: s.text,
})));
process.stdout.write(JSON.stringify(out));
