// Files at a revision: a directory a page at a time, a file (text, image, binary or redacted),
// and a path's versions.
import { el, api, link, tabs, table, short, bytes, name, query, shown } from './dom.js';

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
  const pre = el('pre', { class: 'text' });
  const frag = document.createDocumentFragment();
  lines.forEach((l, i) => frag.append(el('div', { class: 'line' }, el('span', { class: 'ln' }, String(i + 1)), shown(l))));
  pre.append(frag);
  return [f.truncated ? el('p', { class: 'muted' }, 'Only the first 512 KiB of ' + bytes(f.size) + ' is shown.') : null, pre];
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

/** The path history view (`#history?ws=ID&path=`). */
export async function showHistory(params) {
  const ws = params.get('ws');
  const path = params.get('path') || '/';
  const page = await api('/api/ws/' + encodeURIComponent(ws) + '/history', { path });
  // Each version against the one before it (the next row: newest first).
  const diffLink = (v, i) => {
    const prev = page.versions[i + 1];
    if (!v.revision || !prev || !prev.revision || v.op === 'delete' || prev.op === 'delete') return '';
    const size = Math.max(v.size || 0, prev.size || 0);
    return link('pathdiff', { ws, path: v.path, old: prev.path, from: prev.revision, to: v.revision, size }, 'diff');
  };
  const rows = page.versions.map((v, i) => el('tr', {},
    el('td', { class: 'num' }, v.revision ? link('rev', { ws, rev: v.revision }, '#' + v.position) : '#' + v.position + ' (purged)'),
    el('td', {}, v.committedAt || '-'),
    el('td', {}, name(v.actor || '-')),
    el('td', {}, v.op, v.from ? [' from ', name(v.from)] : null),
    el('td', {}, v.revision && v.op !== 'delete' ? link('file', { ws, rev: v.revision, path: v.path }, name(v.path)) : name(v.path)),
    el('td', { class: 'num' }, v.redacted ? 'redacted' : bytes(v.size)),
    el('td', {}, diffLink(v, i))));
  return el('section', { id: 'history' },
    el('h1', {}, 'History of ', name(path)),
    tabs(ws, 'tree'),
    table(['pos', 'time', 'actor', 'change', 'path', 'size', 'against the previous'], rows),
    page.nextCursor ? el('p', { class: 'muted' }, 'Older versions follow (the first 100 are shown).') : null);
}
