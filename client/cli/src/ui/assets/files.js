// Files at a revision: a directory a page at a time, a file (text, image, binary or redacted),
// and a path's versions.
import { el, api, link, tabs, table, short, bytes, name, query, shown, hrefTo } from './dom.js';
import { stream, highlighted } from './diffview.js';
import { languageOf, tokenize, tokenNodes } from './highlight.js';

function crumbs(ws, rev, path) {
  const parts = path.split('/').filter(Boolean);
  const out = [link('tree', { ws, rev, path: '/' }, '/')];
  let at = '';
  for (const p of parts) {
    at += '/' + p;
    out.push(' ', link('tree', { ws, rev, path: at }, name(p)), ' /');
  }
  return el('p', { class: 'crumbs' }, out);
}

function revLabel(rev) {
  return rev ? 'at ' + short(rev) : 'at the head';
}

/** The directory view (`#tree?ws=ID&rev=&path=`). */
export async function showTree(params) {
  const ws = params.get('ws');
  const rev = params.get('rev') || '';
  const path = params.get('path') || '/';
  const body = el('tbody', {});
  const more = el('button', { type: 'button', id: 'more' }, 'more entries');
  let cursor = null;
  let pinned = rev;
  const load = async () => {
    const page = await api('/api/ws/' + encodeURIComponent(ws) + '/tree', { path, rev: pinned, cursor });
    pinned = pinned || page.revision || '';
    const frag = document.createDocumentFragment();
    for (const d of page.directories) {
      const child = (path === '/' ? '' : path) + '/' + d;
      frag.append(el('tr', { class: 'dir' },
        el('td', {}, link('tree', { ws, rev: pinned, path: child }, name(d) + '/')),
        el('td', {}, 'directory'), el('td', {}, ''), el('td', {}, '')));
    }
    for (const f of page.files) {
      const base = f.path.slice(f.path.lastIndexOf('/') + 1);
      frag.append(el('tr', { class: 'file' },
        el('td', {}, link('file', { ws, rev: pinned, path: f.path }, name(base))),
        el('td', {}, f.kind || 'file', f.redacted ? ' (redacted)' : ''),
        el('td', { class: 'num' }, bytes(f.size)),
        el('td', { class: 'mono' }, (f.mode ?? 420).toString(8))));
    }
    body.append(frag);
    cursor = page.nextCursor;
    more.hidden = !cursor;
    return page;
  };
  more.addEventListener('click', load);
  const first = await load();
  return el('section', { id: 'tree' },
    el('h1', {}, 'Files ', revLabel(first.revision)),
    tabs(ws, 'tree'),
    crumbs(ws, pinned, path),
    el('table', { class: 'listing' },
      el('thead', {}, el('tr', {}, ['name', 'kind', 'size', 'mode'].map((h) => el('th', {}, h)))), body),
    more);
}

function content(ws, rev, f) {
  if (f.redacted) return el('p', { class: 'redacted' }, 'Redacted: this version\u2019s content was removed.');
  if (f.kind === 'symlink') return el('p', {}, 'Symbolic link to ', el('code', {}, name(f.text ?? '')));
  if (f.kind === 'directory') return el('p', {}, 'A directory entry.');
  const raw = '/api/ws/' + encodeURIComponent(ws) + '/raw?' + query({ path: f.path, rev });
  if (f.image) return el('img', { src: raw, alt: name(f.path), class: 'shown' });
  if (f.binary) return el('p', {}, 'Binary file, ' + bytes(f.size) + ': not shown. ', el('a', { href: raw, download: '' }, 'download'));
  const lines = (f.text ?? '').split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  const lang = highlighted(lines.length) ? languageOf(f.path) : null;
  const pre = el('pre', { class: 'text' + (lang ? ' lang-' + lang : '') });
  const status = el('p', { class: 'muted drawing', hidden: true }, '');
  let state = -1, at = 0;
  const draw = (l) => {
    const line = el('div', { class: 'line' }, el('span', { class: 'ln', 'data-n': String(++at) }));
    if (!lang) { line.append(shown(l)); return line; }
    const t = tokenize(lang, shown(l), state);
    state = t.state;
    line.append(...tokenNodes(t.tokens));
    return line;
  };
  stream(pre, lines, draw, status);
  return [f.truncated ? el('p', { class: 'muted' }, 'Only the first 512 KiB of ' + bytes(f.size) + ' is shown.') : null, pre, status];
}

/** The file view (`#file?ws=ID&rev=&path=`). */
export async function showFile(params) {
  const ws = params.get('ws');
  const rev = params.get('rev') || '';
  const path = params.get('path') || '/';
  const f = await api('/api/ws/' + encodeURIComponent(ws) + '/file', { path, rev });
  return el('section', { id: 'file' },
    el('h1', {}, name(path)),
    tabs(ws, 'tree'),
    crumbs(ws, rev, path.slice(0, path.lastIndexOf('/')) || '/'),
    el('p', { class: 'muted' }, (f.kind || 'file') + ', ' + bytes(f.size) + ', mode ' + f.mode + ', ' + revLabel(f.revision) + ' ',
      link('history', { ws, path }, 'history of this path')),
    content(ws, f.revision || rev, f));
}

/** Whether a version can be diffed (its content is there: not a deletion, not purged). */
function diffable(v) {
  return Boolean(v && v.revision && v.op !== 'delete');
}

/** The pathdiff view of `from` against `to` (two versions of the path's history). */
function pairHref(ws, from, to) {
  const size = Math.max(from.size || 0, to.size || 0);
  return hrefTo('pathdiff', { ws, path: to.path, old: from.path, from: from.revision, to: to.revision, size });
}

function versionRow(ws, versions, i) {
  const v = versions[i];
  const prev = versions[i + 1];
  const pick = (side) => el('input', {
    type: 'radio', name: side, value: String(i), 'aria-label': side + ' #' + v.position, disabled: !diffable(v),
  });
  return el('tr', { 'data-position': v.position },
    el('td', { class: 'num' }, v.revision ? link('rev', { ws, rev: v.revision }, '#' + v.position) : '#' + v.position + ' (purged)'),
    el('td', {}, v.committedAt || '-'),
    el('td', {}, name(v.actor || '-')),
    el('td', {}, v.op, v.from ? [' from ', name(v.from)] : null),
    el('td', {}, diffable(v) ? link('file', { ws, rev: v.revision, path: v.path }, name(v.path)) : name(v.path)),
    el('td', { class: 'num' }, v.redacted ? 'redacted' : bytes(v.size)),
    el('td', { class: 'pick' }, pick('from')),
    el('td', { class: 'pick' }, pick('to')),
    el('td', {}, diffable(v) && diffable(prev) ? el('a', { href: pairHref(ws, prev, v), class: 'previous' }, 'diff') : ''));
}

/**
 * The path history view (`#history?ws=ID&path=`): versions newest first, a page at a time;
 * any two chosen (from, to) are compared, and each links to its diff against the one before.
 */
export async function showHistory(params) {
  const ws = params.get('ws');
  const path = params.get('path') || '/';
  const versions = [];
  const body = el('tbody', {});
  const more = el('button', { type: 'button', id: 'more' }, 'older versions');
  let cursor = null;
  const load = async () => {
    const page = await api('/api/ws/' + encodeURIComponent(ws) + '/history', { path, cursor });
    const from = versions.length;
    versions.push(...page.versions);
    // The last row of the previous page links to the first of this one.
    if (from > 0) body.lastElementChild?.replaceWith(versionRow(ws, versions, from - 1));
    for (let i = from; i < versions.length; i++) body.append(versionRow(ws, versions, i));
    cursor = page.nextCursor;
    more.hidden = !cursor;
  };
  more.addEventListener('click', load);
  await load();
  const form = el('form', { id: 'versions' });
  const chosen = (side) => {
    const r = form.querySelector(`input[name="${side}"]:checked`);
    return r ? versions[Number(r.value)] : null;
  };
  const why = el('span', { class: 'muted', id: 'compare-why' }, '');
  const compare = el('button', { type: 'button', id: 'compare' }, 'Compare the chosen versions');
  compare.addEventListener('click', () => {
    const [from, to] = [chosen('from'), chosen('to')];
    if (!from || !to) { why.textContent = ' Choose a version in each column.'; return; }
    if (from === to) { why.textContent = ' Choose two different versions.'; return; }
    location.hash = pairHref(ws, from, to);
  });
  // The two newest versions with content are chosen to begin with (older as "from").
  const open = versions.map((v, i) => [v, i]).filter(([v]) => diffable(v)).slice(0, 2);
  form.append(table(['pos', 'time', 'actor', 'change', 'path', 'size', 'from', 'to', 'against the previous'], []));
  form.querySelector('tbody').replaceWith(body);
  if (open.length === 2) {
    body.querySelectorAll('input[name="to"]')[open[0][1]].checked = true;
    body.querySelectorAll('input[name="from"]')[open[1][1]].checked = true;
  }
  return el('section', { id: 'history' },
    el('h1', {}, 'History of ', name(path)),
    tabs(ws, 'tree'),
    el('p', {}, compare, why),
    form,
    more);
}
