// The workspaces the identity may see, as a fork tree: label, head, size, forks, lease, last
// activity.
import { el, link, table, short, bytes, name } from './dom.js';
import { api } from './dom.js';

function row(w, depth) {
  const lease = w.lease ? w.lease.holder + ' until ' + w.lease.expiresAt : '';
  return el('tr', { 'data-ws': w.workspaceId },
    el('td', { class: 'fork depth' + Math.min(depth, 6) },
      depth ? '\u21b3 ' : '', link('ws', { ws: w.workspaceId }, name(w.label || '(no label)'))),
    el('td', { class: 'mono' }, short(w.workspaceId)),
    el('td', {}, w.headRevision
      ? link('rev', { ws: w.workspaceId, rev: w.headRevision }, '#' + w.headPosition + ' ' + short(w.headRevision))
      : 'empty'),
    el('td', { class: 'num' }, bytes(w.storeBytes)),
    el('td', {}, lease),
    el('td', {}, w.updatedAt));
}

/** The workspaces view. */
export async function showWorkspaces() {
  const { workspaces } = await api('/api/workspaces');
  const ids = new Set(workspaces.map((w) => w.workspaceId));
  const children = new Map();
  const roots = [];
  for (const w of workspaces) {
    const parent = w.forkedFrom && ids.has(w.forkedFrom.workspaceId) ? w.forkedFrom.workspaceId : null;
    if (parent) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(w);
    } else roots.push(w);
  }
  const rows = [];
  const walk = (w, depth) => {
    rows.push(row(w, depth));
    for (const c of children.get(w.workspaceId) || []) walk(c, depth + 1);
  };
  roots.forEach((w) => walk(w, 0));
  return el('section', { id: 'workspaces' },
    el('h1', {}, 'Workspaces'),
    workspaces.length ? table(['label', 'id', 'head', 'store size', 'lease', 'last activity'], rows)
      : el('p', { class: 'muted' }, 'No workspace this identity may read.'));
}
