// Lexing of SQL text for the editor: tokens for highlighting, statements
// split at semicolons (outside strings, quoted names and comments), and
// offsets mapped to line:column.
//
// Where a string, quoted name or comment ends follows the server's one
// splitter (sql.Segments in sql/split.go): '' is a quote inside '…' and a
// backslash escapes nothing, except in E'…' strings; "…" and `…` are quoted
// names; -- runs to the end of the line; /* … */ does not nest. The Go test
// TestSplitCases runs split() with node over the server's quoting cases
// (sql/splittest/cases.json).

// WS is white space as the server trims it (Go's unicode.IsSpace).
const WS = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;

// IDENT is a byte of an identifier to the server: an E after one starts
// no E'…' string.
const IDENT = /[A-Za-z0-9_$\u0080-\uffff]/;

// tokenize returns the tokens of text, each {type, text, start}: type is
// one of ws, comment, string, ident (quoted name), number, word, punct. An
// unterminated string, quoted name or block comment runs to the end of
// text and has open set.
export function tokenize(text) {
  const out = [];
  let i = 0;
  const n = text.length;
  const push = (type, start, end, open) => out.push({ type, text: text.slice(start, end), start, open });
  while (i < n) {
    const c = text[i];
    const start = i;
    if (WS.test(c)) {
      while (i < n && WS.test(text[i])) i++;
      push('ws', start, i);
    } else if (c === '-' && text[i + 1] === '-') {
      while (i < n && text[i] !== '\n') i++;
      push('comment', start, i);
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? n : end + 2;
      push('comment', start, i, end < 0);
    } else if (c === "'" || c === '"' || c === '`' ||
        ((c === 'E' || c === 'e') && text[i + 1] === "'" && (i === 0 || !IDENT.test(text[i - 1])))) {
      const q = c === '"' || c === '`' ? c : "'";
      const escapes = q !== c; // E'…'
      i += escapes ? 2 : 1;
      let open = true;
      while (i < n) {
        if (escapes && text[i] === '\\') { i += 2; continue; }
        if (text[i] === q) {
          if (text[i + 1] === q) { i += 2; continue; }
          i++;
          open = false;
          break;
        }
        i++;
      }
      if (i > n) i = n;
      push(q === "'" ? 'string' : 'ident', start, i, open);
    } else if (/[0-9]/.test(c)) {
      while (i < n && /[0-9.eE]/.test(text[i])) i++;
      push('number', start, i);
    } else if (/[A-Za-z_]/.test(c)) {
      while (i < n && /[A-Za-z0-9_]/.test(text[i])) i++;
      push('word', start, i);
    } else {
      i++;
      push('punct', start, i);
    }
  }
  return out;
}

// split returns the statements of text as {text, start}: start is the
// offset of the statement's first character in text. Blank statements and
// comment-only ones are left out; an unterminated block comment is not
// blank (the server reports it).
export function split(text) {
  const stmts = [];
  let begin = 0;
  let meaningful = false;
  for (const t of tokenize(text)) {
    if (t.type === 'punct' && t.text === ';') {
      if (meaningful) stmts.push(trimmed(text, begin, t.start));
      begin = t.start + 1;
      meaningful = false;
    } else if (t.type !== 'ws' && (t.type !== 'comment' || t.open)) {
      meaningful = true;
    }
  }
  if (meaningful) stmts.push(trimmed(text, begin, text.length));
  return stmts;
}

function trimmed(text, start, end) {
  while (start < end && WS.test(text[start])) start++;
  while (end > start && WS.test(text[end - 1])) end--;
  return { text: text.slice(start, end), start };
}

// lineCol returns the 1-based line and column of offset in text.
export function lineCol(text, offset) {
  let line = 1;
  let col = 1;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text[i] === '\n') { line++; col = 1; } else col++;
  }
  return { line, col };
}

// offsetOf returns the offset of 1-based line:col in text.
export function offsetOf(text, line, col) {
  let off = 0;
  for (let l = 1; l < line; l++) {
    const nl = text.indexOf('\n', off);
    if (nl < 0) return text.length;
    off = nl + 1;
  }
  return Math.min(off + col - 1, text.length);
}

// firstWords returns the first n words of a statement, upper-cased.
export function firstWords(stmt, n) {
  const words = [];
  for (const t of tokenize(stmt)) {
    if (t.type === 'word') words.push(t.text.toUpperCase());
    if (words.length === n) break;
  }
  return words;
}

// isPush reports whether a SELECT runs until stopped: it has EMIT.
export function isPush(stmt) {
  return tokenize(stmt).some((t) => t.type === 'word' && t.text.toUpperCase() === 'EMIT');
}
