// A file's unified diff drawn unified or side by side, highlighted by the file's language, and
// streamed: the first lines at once, the rest a slice at a time between the browser's other
// work (each slice stops after a few milliseconds), so a diff of megabytes never blocks the
// page. Every line goes in as text nodes and spans' textContent.
import { el, shown } from './dom.js';
import { languageOf, tokenize, tokenNodes } from './highlight.js';

/** How long one slice of drawing may run before it gives the browser back its turn (ms). */
const SLICE_MS = 12;
/** Lines drawn before the first turn is given back (what shows at once). */
const FIRST_LINES = 400;
/** Lines a block of the drawing holds (blocks off screen are not laid out). */
const CHUNK_LINES = 200;
/** Lines after which highlighting stops (a huge diff is drawn plain, and says so). */
const HIGHLIGHT_LINES = 50000;

const LAYOUT_KEY = 'supabash.diffLayout';

/** The layout chosen last ('unified' or 'split'), kept in this browser. */
export function layout() {
  try { return localStorage.getItem(LAYOUT_KEY) === 'split' ? 'split' : 'unified'; } catch (e) { return 'unified'; }
}

function remember(value) {
  try { localStorage.setItem(LAYOUT_KEY, value); } catch (e) { /* private mode: not kept */ }
}

/**
 * The lines of a unified diff as records: {t: 'meta'|'hunk'|'del'|'add'|'ctx'|'eol', s: text
 * without its mark, raw: the line, o: old line number, n: new line number}. Lines inside a
 * hunk are told apart by the hunk's counts, so a deleted line "--- x" is not a header.
 */
export function parseUnified(text) {
  const lines = text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  const out = [];
  let oldLeft = 0, newLeft = 0, o = 0, n = 0;
  for (const raw of lines) {
    const inHunk = oldLeft > 0 || newLeft > 0;
    const h = !inHunk && /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(raw);
    if (h) {
      o = Number(h[1]); n = Number(h[3]);
      oldLeft = h[2] === undefined ? 1 : Number(h[2]);
      newLeft = h[4] === undefined ? 1 : Number(h[4]);
      if (oldLeft === 0) o += 1;
      if (newLeft === 0) n += 1;
      out.push({ t: 'hunk', s: raw, raw });
    } else if (raw.startsWith('\\')) {
      out.push({ t: 'eol', s: raw, raw });
    } else if (inHunk && raw.startsWith('-')) {
      out.push({ t: 'del', s: raw.slice(1), raw, o: o++ }); oldLeft--;
    } else if (inHunk && raw.startsWith('+')) {
      out.push({ t: 'add', s: raw.slice(1), raw, n: n++ }); newLeft--;
    } else if (inHunk) {
      out.push({ t: 'ctx', s: raw.slice(1), raw, o: o++, n: n++ }); oldLeft--; newLeft--;
    } else {
      out.push({ t: 'meta', s: raw, raw });
    }
  }
  return out;
}

/** Rows of the side-by-side layout: [left record or null, right record or null] (a header row holds the record on both). */
export function pairRows(records) {
  const rows = [];
  let dels = [], adds = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) rows.push([dels[i] ?? null, adds[i] ?? null]);
    dels = []; adds = [];
  };
  for (const r of records) {
    if (r.t === 'del') { if (adds.length) flush(); dels.push(r); continue; }
    if (r.t === 'add') { adds.push(r); continue; }
    flush();
    rows.push([r, r]);
  }
  flush();
  return rows;
}

/** Whether a file of `count` lines is highlighted (a huge one is drawn plain). */
export function highlighted(count) {
  return count <= HIGHLIGHT_LINES;
}

/** Highlights the text of records, carrying multi-line state per side. */
function highlighter(path, count) {
  const lang = highlighted(count) ? languageOf(path) : null;
  let before = -1, after = -1;
  return (r) => {
    const text = shown(r.s);
    if (!lang || r.t === 'meta' || r.t === 'hunk' || r.t === 'eol') return [document.createTextNode(text)];
    const side = r.t === 'add' ? after : before;
    const { tokens, state } = tokenize(lang, text, side);
    if (r.t !== 'add') before = state;
    if (r.t !== 'del') after = state;
    return tokenNodes(tokens);
  };
}

/** The line number gutter: its number drawn by CSS from an attribute, so copied text and textContent hold only the line. */
function gutter(number) {
  return el('span', { class: 'ln', 'data-n': number ?? '' });
}

const MARK = { add: '+', del: '-', ctx: ' ' };

function unifiedLine(r, paint) {
  const mark = MARK[r.t];
  const line = el('div', { class: r.t }, gutter(r.o), gutter(r.n));
  if (mark === undefined) line.append(...paint(r));
  else line.append(mark, ...paint(r));
  return line;
}

function splitCell(r, side, paint) {
  if (!r) return [el('span', { class: 'ln' }), el('div', { class: 'cell empty' })];
  const cls = r.t === 'ctx' ? 'ctx' : r.t;
  return [gutter(side === 'old' ? r.o : r.n), el('div', { class: 'cell ' + cls }, ...paint(r))];
}

function splitRow([left, right], paint) {
  if (left && left === right && left.t !== 'ctx') {
    return el('div', { class: 'row full ' + left.t }, el('div', { class: 'cell' }, ...paint(left)));
  }
  if (left && left === right) {
    // A context line: highlighted once, its nodes copied for the other side.
    const nodes = paint(left);
    return el('div', { class: 'row' }, splitCell(left, 'old', () => nodes),
      splitCell(right, 'new', () => nodes.map((x) => x.cloneNode(true))));
  }
  return el('div', { class: 'row' }, splitCell(left, 'old', paint), splitCell(right, 'new', paint));
}

/**
 * Draws `items` into `box` with `draw`, in blocks of CHUNK_LINES lines (`div.chunk`: the page
 * lays out and paints only the blocks on screen, so the thousandth block costs what the first
 * did): the first lines at once, the rest a slice at a time; `status` says how far it is.
 * Answers a function that stops it.
 */
export function stream(box, items, draw, status) {
  let done = 0, stopped = false, shownOnce = false, chunk = null;
  const put = (node) => {
    if (!chunk || chunk.childElementCount >= CHUNK_LINES) {
      chunk = document.createElement('div');
      chunk.className = 'chunk';
      box.append(chunk);
    }
    chunk.append(node);
  };
  const slice = () => {
    // Stops when the page moved on (the box was shown, and is no longer).
    shownOnce = shownOnce || box.isConnected;
    if (stopped || (shownOnce && !box.isConnected)) return;
    const until = performance.now() + SLICE_MS;
    const first = done === 0;
    while (done < items.length && (first ? done < FIRST_LINES : performance.now() < until)) put(draw(items[done++]));
    if (done < items.length) {
      status.textContent = `drawing\u2026 ${done.toLocaleString('en')} of ${items.length.toLocaleString('en')} lines`;
      setTimeout(slice, 0);
    } else {
      status.textContent = '';
      status.hidden = true;
      box.dataset.complete = 'true';
      box.dataset.doneAt = String(Math.round(performance.now()));
      box.dispatchEvent(new CustomEvent('supabash:drawn', { bubbles: true }));
    }
  };
  status.hidden = false;
  slice();
  return () => { stopped = true; };
}

/**
 * A file's diff (its unified text; its path names the language) in the layout chosen last;
 * a `supabash:layout` event (from layoutSwitch) redraws it in another.
 */
export function diffBlock(text, path) {
  const records = parseUnified(text);
  const holder = el('div', { class: 'diff-holder' });
  const status = el('p', { class: 'muted drawing', hidden: true }, '');
  let stop = () => {};
  const render = (which) => {
    stop();
    const paint = highlighter(path, records.length);
    let box, items, draw;
    if (which === 'split') {
      box = el('div', { class: 'diff split', 'data-layout': 'split' });
      items = pairRows(records);
      draw = (row) => splitRow(row, paint);
    } else {
      box = el('pre', { class: 'diff', 'data-layout': 'unified' });
      items = records;
      draw = (r) => unifiedLine(r, paint);
    }
    holder.replaceChildren(box, status);
    stop = stream(box, items, draw, status);
  };
  holder.addEventListener('supabash:layout', (e) => render(e.detail));
  render(layout());
  const notes = records.length > HIGHLIGHT_LINES && languageOf(path)
    ? el('p', { class: 'muted' }, `Over ${HIGHLIGHT_LINES.toLocaleString('en')} lines: not highlighted.`) : null;
  return [notes, holder];
}

/** The unified / side-by-side switch of a page: redraws every diff under `scope`. */
export function layoutSwitch(scope) {
  const buttons = [['unified', 'Unified'], ['split', 'Side by side']].map(([value, label]) =>
    el('button', { type: 'button', 'data-layout': value, 'aria-pressed': String(layout() === value) }, label));
  for (const b of buttons) {
    b.addEventListener('click', () => {
      const value = b.dataset.layout;
      remember(value);
      for (const x of buttons) x.setAttribute('aria-pressed', String(x === b));
      for (const h of scope().querySelectorAll('.diff-holder')) {
        h.dispatchEvent(new CustomEvent('supabash:layout', { detail: value }));
      }
    });
  }
  return el('div', { class: 'layout-switch', role: 'group', 'aria-label': 'diff layout' }, buttons);
}
