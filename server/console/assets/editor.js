// The SQL editor: a textarea over a highlighted copy of its text, and a
// completion list of keywords, functions, stream and table names and
// their columns (from /console/api/completions, the words the shell
// completes from). Tab or Ctrl-Space opens the list; arrows move, Enter or
// Tab take, Esc closes.

import { tokenize } from './sql.js';

const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export class Editor {
  constructor(root, { onRun, onStop }) {
    this.root = root;
    this.area = root.querySelector('textarea');
    this.code = root.querySelector('pre code');
    this.pre = root.querySelector('pre');
    this.list = root.querySelector('[role=listbox]');
    this.words = { keywords: [], functions: [], sources: [] };
    this.errorLine = 0;
    this.onRun = onRun;
    this.onStop = onStop;
    this.area.addEventListener('input', () => { this.errorLine = 0; this.render(); this.suggest(false); });
    this.area.addEventListener('scroll', () => this.syncScroll());
    this.area.addEventListener('keydown', (e) => this.key(e));
    this.area.addEventListener('blur', () => setTimeout(() => this.close(), 150));
    this.list.addEventListener('mousedown', (e) => {
      const li = e.target.closest('li');
      if (li) { e.preventDefault(); this.take(li.dataset.word); }
    });
    this.render();
  }

  get value() { return this.area.value; }
  set value(v) { this.area.value = v; this.render(); }

  setWords(w) { this.words = w; }

  // render highlights the text into the <pre> behind the textarea.
  render() {
    const keywords = new Set(this.words.keywords || []);
    const functions = new Set(this.words.functions || []);
    const sources = new Set((this.words.sources || []).map((s) => s.name));
    let html = '';
    for (const t of tokenize(this.area.value)) {
      let cls = '';
      if (t.type === 'word') {
        const u = t.text.toUpperCase();
        if (keywords.has(u)) cls = 'kw';
        else if (functions.has(u)) cls = 'fn';
        else if (sources.has(u)) cls = 'src';
      } else if (t.type !== 'ws' && t.type !== 'punct') {
        cls = t.type;
      }
      html += cls ? `<span class="tok-${cls}">${esc(t.text)}</span>` : esc(t.text);
    }
    if (this.errorLine) {
      // Mark the line of the last error.
      const parts = html.split('\n');
      const lines = [];
      for (let i = 0; i < parts.length; i++) {
        lines.push(i + 1 === this.errorLine ? `<span class="err-line">${parts[i] || ' '}</span>` : parts[i]);
      }
      html = lines.join('\n');
    }
    this.code.innerHTML = html + '\n';
    this.syncScroll();
  }

  syncScroll() {
    this.pre.scrollTop = this.area.scrollTop;
    this.pre.scrollLeft = this.area.scrollLeft;
  }

  // markError puts the caret at offset and marks its line.
  markError(offset, line) {
    this.errorLine = line;
    this.render();
    this.area.focus();
    this.area.setSelectionRange(offset, offset + 1);
  }

  key(e) {
    const open = !this.list.hidden;
    if ((e.ctrlKey || e.metaKey) && e.key === 'Enter') {
      e.preventDefault();
      this.close();
      this.onRun();
      return;
    }
    if (e.key === 'Escape') {
      if (open) { e.preventDefault(); this.close(); return; }
      this.onStop();
      return;
    }
    if (e.ctrlKey && e.key === ' ') { e.preventDefault(); this.suggest(true); return; }
    if (open) {
      const items = [...this.list.children];
      let i = items.findIndex((li) => li.getAttribute('aria-selected') === 'true');
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        i = (i + (e.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length;
        this.select(i);
        return;
      }
      if (e.key === 'Enter' || e.key === 'Tab') {
        e.preventDefault();
        this.take(items[Math.max(i, 0)].dataset.word);
        return;
      }
    } else if (e.key === 'Tab' && !e.shiftKey) {
      // Tab completes when a word is being typed; otherwise it leaves
      // the editor, as keyboard users expect.
      if (this.current().word) { e.preventDefault(); this.suggest(true); }
    }
  }

  // current returns the word ending at the caret and its start.
  current() {
    const pos = this.area.selectionStart;
    let start = pos;
    while (start > 0 && /[A-Za-z0-9_]/.test(this.area.value[start - 1])) start--;
    return { word: this.area.value.slice(start, pos), start, pos };
  }

  candidates(word) {
    const text = this.area.value.toUpperCase();
    const cols = [];
    for (const s of this.words.sources || []) {
      if (new RegExp(`\\b${s.name}\\b`).test(text)) cols.push(...s.columns);
    }
    const pool = [...(this.words.keywords || []), ...(this.words.functions || []),
      ...(this.words.sources || []).map((s) => s.name), ...cols];
    const u = word.toUpperCase();
    const seen = new Set();
    const out = [];
    for (const c of pool) {
      if (c.includes(' ') || seen.has(c) || !c.toUpperCase().startsWith(u) || c.length === word.length) continue;
      seen.add(c);
      out.push(c);
    }
    return out.sort().slice(0, 50);
  }

  // suggest opens the list for the word at the caret; forced opens it
  // even for one letter.
  suggest(forced) {
    const { word } = this.current();
    if (!word || (!forced && word.length < 2)) { this.close(); return; }
    const cands = this.candidates(word);
    if (!cands.length) { this.close(); return; }
    const lower = word === word.toLowerCase();
    this.list.innerHTML = cands.map((c, i) => {
      const w = lower && (this.words.keywords || []).includes(c) ? c.toLowerCase() : c;
      return `<li role="option" id="cmp-${i}" data-word="${esc(w)}">${esc(w)}</li>`;
    }).join('');
    // Under the caret's line (CSSOM, which the page's CSP allows).
    const line = this.area.value.slice(0, this.area.selectionStart).split('\n').length;
    const lh = parseFloat(getComputedStyle(this.area).lineHeight) || 21;
    const top = Math.min(10 + line * lh - this.area.scrollTop, this.area.clientHeight);
    this.list.style.top = `${Math.max(top, 0) + 4}px`;
    this.list.hidden = false;
    this.area.setAttribute('aria-expanded', 'true');
    this.select(0);
  }

  select(i) {
    [...this.list.children].forEach((li, j) => li.setAttribute('aria-selected', String(i === j)));
    const li = this.list.children[i];
    if (li) {
      this.area.setAttribute('aria-activedescendant', li.id);
      li.scrollIntoView({ block: 'nearest' });
    }
  }

  take(word) {
    const { start, pos } = this.current();
    const v = this.area.value;
    this.area.value = v.slice(0, start) + word + v.slice(pos);
    const caret = start + word.length;
    this.area.setSelectionRange(caret, caret);
    this.close();
    this.render();
    this.area.focus();
  }

  close() {
    this.list.hidden = true;
    this.area.setAttribute('aria-expanded', 'false');
    this.area.removeAttribute('aria-activedescendant');
  }
}
