// Lexing of SQL text for the editor: tokens for highlighting, statements
// split at semicolons (outside strings, quoted names and comments), and
// offsets mapped to line:column.

// tokenize returns the tokens of text, each {type, text, start}: type is
// one of ws, comment, string, ident (quoted name), number, word, punct.
export function tokenize(text) {
  const out = [];
  let i = 0;
  const n = text.length;
  const push = (type, start, end) => out.push({ type, text: text.slice(start, end), start });
  while (i < n) {
    const c = text[i];
    const start = i;
    if (/\s/.test(c)) {
      while (i < n && /\s/.test(text[i])) i++;
      push('ws', start, i);
    } else if (c === '-' && text[i + 1] === '-') {
      while (i < n && text[i] !== '\n') i++;
      push('comment', start, i);
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? n : end + 2;
      push('comment', start, i);
    } else if (c === "'" || c === '"' || c === '`') {
      i++;
      while (i < n) {
        if (text[i] === c) {
          if (text[i + 1] === c) { i += 2; continue; }
          i++;
          break;
        }
        i++;
      }
      push(c === "'" ? 'string' : 'ident', start, i);
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
// comment-only ones are left out.
export function split(text) {
  const stmts = [];
  let begin = 0;
  let meaningful = false;
  for (const t of tokenize(text)) {
    if (t.type === 'punct' && t.text === ';') {
      if (meaningful) stmts.push(trimmed(text, begin, t.start));
      begin = t.start + 1;
      meaningful = false;
    } else if (t.type !== 'ws' && t.type !== 'comment') {
      meaningful = true;
    }
  }
  if (meaningful) stmts.push(trimmed(text, begin, text.length));
  return stmts;
}

function trimmed(text, start, end) {
  while (start < end && /\s/.test(text[start])) start++;
  while (end > start && /\s/.test(text[end - 1])) end--;
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
