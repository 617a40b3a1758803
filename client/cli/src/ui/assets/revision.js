// One revision: its receipt, the audit records that produced it (each linking to the audit
// trail), and its changes as unified diffs; and the audit trail, each record linking to the
// revision it led to.
import { el, api, link, tabs, table, short, bytes, name, shown } from './dom.js';

/** How many diff lines are drawn before a "show more" button (the rest on demand). */
const LINES_AT_ONCE = 2000;

function outcome(o) {
  if (!o) return '';
  if (o.status === 'error') return 'error ' + o.code;
  if (o.status === 'denied') return 'denied (' + o.reason + ')';
  return o.status;
}

function lineClass(line) {
  if (line.startsWith('@@')) return 'hunk';
  if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff --git')) return 'meta';
  if (line.startsWith('+')) return 'add';
  if (line.startsWith('-')) return 'del';
  return 'ctx';
}

/** The lines of a diff, drawn LINES_AT_ONCE at a time. */
function diffLines(text) {
  const lines = text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  const pre = el('pre', { class: 'diff' });
  let done = 0;
  const more = el('button', { type: 'button', class: 'more' }, '');
  const draw = () => {
    const frag = document.createDocumentFragment();
    const end = Math.min(lines.length, done + LINES_AT_ONCE);
    for (; done < end; done++) frag.append(el('div', { class: lineClass(lines[done]) }, shown(lines[done])));
    pre.append(frag);
    more.hidden = done >= lines.length;
    more.textContent = `show ${Math.min(LINES_AT_ONCE, lines.length - done)} more lines`;
  };
  more.addEventListener('click', draw);
  draw();
  return [pre, more];
}

function fileBlock(ws, rev, f) {
  const title = f.from && f.from !== f.path ? [name(f.from), ' \u2192 ', name(f.path)] : [name(f.path)];
  const notes = [];
  if (f.beforeMode && f.afterMode && f.beforeMode !== f.afterMode) notes.push('mode ' + f.beforeMode + ' \u2192 ' + f.afterMode);
  if (f.afterKind === 'symlink') notes.push('symbolic link');
  if (f.binary) notes.push('binary');
  if (f.redacted) notes.push('redacted');
  if (f.truncated) notes.push('diff cut at 512 KiB');
  let content;
  if (f.large) content = el('p', { class: 'muted' }, 'A large file (' + bytes(f.large) + '): not shown. Open it from the file view.');
  else if (f.error) content = el('p', { class: 'error' }, 'Could not read this file: ' + f.error);
  else if (f.unified !== undefined) content = diffLines(f.unified);
  else content = null;
  return el('section', { class: 'file-diff', 'data-path': f.path },
    el('h3', {}, el('span', { class: 'kind ' + f.kind }, f.kind), ' ',
      f.kind === 'deleted' ? el('span', {}, title) : link('file', { ws, rev, path: f.path }, title),
      notes.length ? el('span', { class: 'muted' }, ' (' + notes.join(', ') + ')') : null,
      ' ', link('history', { ws, path: f.path }, 'history')),
    content);
}

function auditRow(ws, r, here) {
  const args = r.arguments === null || r.arguments === undefined ? (r.scrubbed ? '(scrubbed)' : '') : JSON.stringify(r.arguments);
  return el('tr', { class: 'audit-record', 'data-record': r.recordId },
    el('td', {}, r.at),
    el('td', {}, name(r.actor)),
    el('td', {}, r.kind),
    el('td', {}, name(r.tool)),
    el('td', { class: 'args' }, el('code', {}, name(args))),
    el('td', {}, outcome(r.outcome)),
    el('td', { class: 'num' }, r.durationMs + ' ms'),
    el('td', {}, r.paths.map((p) => el('div', {}, name(p)))),
    el('td', {}, r.discarded ? 'discarded' : r.revision
      ? (here ? link('audit', { ws, record: r.recordId }, 'in the trail') : link('rev', { ws, rev: r.revision, record: r.recordId }, 'revision ' + short(r.revision)))
      : 'staged'));
}

const AUDIT_HEADERS = ['at', 'actor', 'kind', 'tool', 'arguments', 'outcome', 'duration', 'paths', ''];

/** The revision view (`#rev?ws=ID&rev=REV`). */
export async function showRevision(params) {
  const ws = params.get('ws');
  const rev = params.get('rev');
  const d = await api('/api/ws/' + encodeURIComponent(ws) + '/revision', { rev });
  const r = d.revision;
  const audit = d.audit.length
    ? table(AUDIT_HEADERS, d.audit.map((a) => auditRow(ws, a, true)), { class: 'audit' })
    : el('p', { class: 'muted' }, 'No audit record: this revision was not made through recorded agent actions.');
  const marked = params.get('record');
  if (marked) {
    const tr = audit.querySelector?.(`tr[data-record="${CSS.escape(marked)}"]`);
    if (tr) tr.classList.add('marked');
  }
  return el('section', { id: 'revision' },
    el('h1', {}, 'Revision #' + r.position),
    tabs(ws, ''),
    el('dl', { class: 'facts' },
      el('dt', {}, 'revision'), el('dd', { class: 'mono' }, r.revision),
      el('dt', {}, 'parent'), el('dd', {}, r.parent ? link('rev', { ws, rev: r.parent }, short(r.parent)) : '-'),
      el('dt', {}, 'committed'), el('dd', {}, r.committedAt),
      el('dt', {}, 'actor'), el('dd', {}, name(r.actor)),
      el('dt', {}, 'cause'), el('dd', { class: 'cause' }, name(r.cause || '-')),
      el('dt', {}, 'files'), el('dd', {}, r.filesChanged + ' changed, ' + bytes(r.bytesWritten) + ' written'),
      el('dt', {}, 'tree'), el('dd', {}, link('tree', { ws, rev: r.revision }, 'browse the files at this revision')),
      r.notes.length ? [el('dt', {}, 'notes'), el('dd', {}, r.notes.map((n) => el('div', {}, name(n.key + ': ' + JSON.stringify(n.value)))))] : null),
    el('h2', {}, 'Agent actions'),
    audit,
    el('h2', {}, 'Changes'),
    d.files.map((f) => fileBlock(ws, r.revision, f)));
}

/** The audit trail (`#audit?ws=ID`), a page at a time. */
export async function showAudit(params) {
  const ws = params.get('ws');
  const marked = params.get('record');
  const body = el('tbody', {});
  const more = el('button', { type: 'button', id: 'more' }, 'load more');
  let cursor = null;
  const load = async () => {
    const page = await api('/api/ws/' + encodeURIComponent(ws) + '/audit', { cursor });
    for (const r of page.records) {
      const tr = auditRow(ws, r, false);
      if (r.recordId === marked) tr.classList.add('marked');
      body.append(tr);
    }
    cursor = page.nextCursor;
    more.hidden = !cursor;
  };
  more.addEventListener('click', load);
  await load();
  return el('section', { id: 'audit' },
    el('h1', {}, 'Audit trail'),
    tabs(ws, 'audit'),
    el('table', { class: 'audit' },
      el('thead', {}, el('tr', {}, AUDIT_HEADERS.map((h) => el('th', {}, h)))), body),
    more);
}

/** A path between two of its versions (`#pathdiff?ws=ID&path=&old=&from=&to=&size=`). */
export async function showPathDiff(params) {
  const ws = params.get('ws');
  const path = params.get('path');
  const d = await api('/api/ws/' + encodeURIComponent(ws) + '/compare', {
    path, old: params.get('old'), from: params.get('from'), to: params.get('to'), size: params.get('size'),
  });
  return el('section', { id: 'pathdiff' },
    el('h1', {}, name(path), ': ', short(d.from), ' \u2192 ', short(d.to)),
    tabs(ws, 'tree'),
    d.files.length ? d.files.map((f) => fileBlock(ws, d.to, f)) : el('p', { class: 'muted' }, 'No difference.'));
}
