// A workspace: its summary, the growth chart, and the revision timeline (oldest first, paged,
// filtered by path and actor), extended live as commits arrive on the change feed.
import { el, api, link, tabs, short, bytes, name, hrefTo } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

/** Files and bytes after each revision of `records` (from the start of history). */
function growth(records) {
  let files = 0, total = 0;
  return records.map((r) => {
    files += r.filesDelta;
    total += r.bytesDelta;
    return { position: r.position, files, bytes: total };
  });
}

/** The growth chart: files and bytes per revision, as two lines. */
function chart(points) {
  const w = 600, h = 120, pad = 4;
  const box = svg('svg', { viewBox: `0 0 ${w} ${h}`, class: 'chart', role: 'img' },
    svg('title', {}, 'files and bytes per revision'));
  if (points.length < 2) return box;
  const line = (key, cls) => {
    const max = Math.max(1, ...points.map((p) => p[key]));
    const d = points.map((p, i) => {
      const x = pad + (i * (w - 2 * pad)) / (points.length - 1);
      const y = h - pad - (Math.max(0, p[key]) * (h - 2 * pad)) / max;
      return (i ? 'L' : 'M') + x.toFixed(1) + ' ' + y.toFixed(1);
    }).join(' ');
    box.append(svg('path', { d, class: cls }));
  };
  line('files', 'files');
  line('bytes', 'bytes');
  const last = points[points.length - 1];
  box.append(svg('text', { x: pad + 2, y: 14, class: 'legend' },
    `files (blue): ${last.files}, bytes (green): ${bytes(last.bytes)} at #${last.position}`));
  return box;
}

function noteText(n) {
  return n.key + ': ' + (typeof n.value === 'string' ? n.value : JSON.stringify(n.value));
}

function row(ws, r) {
  return el('tr', { 'data-rev': r.revision },
    el('td', { class: 'num' }, link('rev', { ws, rev: r.revision }, '#' + r.position)),
    el('td', { class: 'mono' }, short(r.revision)),
    el('td', {}, r.committedAt),
    el('td', {}, name(r.actor)),
    el('td', { class: 'cause' }, name(r.cause || '')),
    el('td', { class: 'num' }, String(r.filesChanged)),
    el('td', { class: 'num' }, bytes(r.bytesWritten)),
    el('td', {}, r.notes.map((n) => el('span', { class: 'note' }, name(noteText(n))))));
}

/** The timeline view (`#ws?ws=ID&path=&actor=`). */
export async function showTimeline(params, ctx) {
  const ws = params.get('ws');
  const filter = { path: params.get('path') || '', actor: params.get('actor') || '' };
  // Both asked at once; the workspace's answer decides the error (an unknown workspace is
  // "not found", whatever history says).
  const infoAsked = api('/api/ws/' + encodeURIComponent(ws));
  const firstAsked = api('/api/ws/' + encodeURIComponent(ws) + '/timeline', { ...filter, limit: 100 });
  firstAsked.catch(() => {});
  const info = await infoAsked;
  const first = await firstAsked;
  const records = [...first.records];
  let next = first.nextCursor;
  let last = records.length ? records[records.length - 1].revision : null;
  const body = el('tbody', {}, records.map((r) => row(ws, r)));
  const chartBox = el('div', { class: 'chart-box' }, chart(growth(records)));
  const head = el('span', { id: 'head' }, info.headRevision ? '#' + info.headPosition + ' ' + short(info.headRevision) : 'empty');
  const more = el('button', { type: 'button', id: 'more', hidden: !next }, 'Older pages: load more');
  const load = async () => {
    const page = await api('/api/ws/' + encodeURIComponent(ws) + '/timeline', { ...filter, cursor: next || last, limit: 100 });
    for (const r of page.records) { records.push(r); body.append(row(ws, r)); last = r.revision; }
    next = page.nextCursor;
    more.hidden = !next;
    chartBox.replaceChildren(chart(growth(records)));
  };
  more.addEventListener('click', load);
  ctx.onChange(async (a) => {
    if (a.revision) head.textContent = '#' + a.position + ' ' + short(a.revision);
    if (a.kind === 'commit' && !next) {
      const page = await api('/api/ws/' + encodeURIComponent(ws) + '/timeline', { ...filter, cursor: last, limit: 100 });
      for (const r of page.records) {
        if (body.querySelector(`tr[data-rev="${CSS.escape(r.revision)}"]`)) continue;
        records.push(r); body.append(row(ws, r)); last = r.revision;
      }
      next = page.nextCursor;
      more.hidden = !next;
      chartBox.replaceChildren(chart(growth(records)));
    }
  });
  const pathIn = el('input', { name: 'path', placeholder: 'path, e.g. /src', value: filter.path });
  const actorIn = el('input', { name: 'actor', placeholder: 'actor', value: filter.actor });
  const apply = () => { location.hash = hrefTo('ws', { ws, path: pathIn.value, actor: actorIn.value }); };
  // The totals scan the tree's index: asked for after the first render.
  const files = el('dd', { id: 'files' }, '\u2026');
  api('/api/ws/' + encodeURIComponent(ws), { totals: 1 }).then((t) => {
    files.textContent = String(t.treeFiles ?? '') + ' (' + bytes(t.treeBytes) + ')';
  }, () => { files.textContent = '?'; });
  const lease = info.lease ? info.lease.holder + ' until ' + info.lease.expiresAt : 'none';
  return el('section', { id: 'timeline' },
    el('h1', {}, name(info.label || '(no label)')),
    tabs(ws, 'ws'),
    el('dl', { class: 'facts' },
      el('dt', {}, 'workspace'), el('dd', { class: 'mono' }, info.workspaceId),
      el('dt', {}, 'head'), el('dd', {}, head),
      el('dt', {}, 'files'), files,
      el('dt', {}, 'forked from'), el('dd', {}, info.forkedFrom
        ? link('rev', { ws: info.forkedFrom.workspaceId, rev: info.forkedFrom.revision }, short(info.forkedFrom.workspaceId) + '@' + short(info.forkedFrom.revision))
        : '-'),
      el('dt', {}, 'lease'), el('dd', {}, name(lease)),
      el('dt', {}, 'last activity'), el('dd', {}, info.updatedAt)),
    chartBox,
    el('div', { class: 'filters' }, pathIn, actorIn,
      el('button', { type: 'button', id: 'filter', onclick: apply }, 'Filter')),
    el('table', { class: 'timeline' },
      el('thead', {}, el('tr', {}, ['pos', 'revision', 'time', 'actor', 'cause', 'files', 'bytes', 'notes'].map((h) => el('th', {}, h)))),
      body),
    more);
}
