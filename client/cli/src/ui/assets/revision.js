// One revision: its receipt, the audit records that produced it (each linking to the audit
// trail), and its changes as unified diffs; and the audit trail, each record linking to the
// revision it led to.
import { el, api, link, tabs, table, short, bytes, name } from './dom.js';
import { diffBlock, layoutSwitch } from './diffview.js';

function outcome(o) {
  if (!o) return '';
  if (o.status === 'error') return 'error ' + o.code;
  if (o.status === 'denied') return 'denied (' + o.reason + ')';
  return o.status;
}

function fileNotes(f) {
  const notes = [];
  if (f.beforeMode && f.afterMode && f.beforeMode !== f.afterMode) notes.push('mode ' + f.beforeMode + ' \u2192 ' + f.afterMode);
  if (f.afterKind === 'symlink') notes.push('symbolic link');
  if (f.binary) notes.push('binary');
  if (f.redacted) notes.push('redacted');
  if (f.truncated) notes.push('diff cut at 5 MiB');
  return notes;
}

/** What a file's diff shows: its lines, or why not. */
function fileContent(f) {
  if (f.large) return el('p', { class: 'muted' }, 'A large file (' + bytes(f.large) + '): not shown. Open it from the file view.');
  if (f.error) return el('p', { class: 'error' }, 'Could not read this file: ' + f.error);
  if (f.unified !== undefined) return diffBlock(f.unified, f.path);
  return null;
}

/**
 * A file's block. A deferred one (a large file) shows a placeholder; `later` gets the work
 * that reads and draws it, run once the page is drawn.
 */
function fileBlock(ws, rev, f, later) {
  const title = f.from && f.from !== f.path ? [name(f.from), ' \u2192 ', name(f.path)] : [name(f.path)];
  const notes = el('span', { class: 'muted' }, fileNotes(f).length ? ' (' + fileNotes(f).join(', ') + ')' : '');
  const body = el('div', { class: 'file-body' });
  if (f.deferred) {
    body.append(el('p', { class: 'muted drawing' }, 'Reading a large diff (' + bytes(f.deferred.size) + ')\u2026'));
    later.push(async () => {
      const d = f.deferred;
      try {
        const got = await api('/api/ws/' + encodeURIComponent(ws) + '/compare', { path: d.path, old: d.old, from: d.from, to: d.to, size: d.size });
        const one = got.files.find((x) => x.path === f.path) || got.files[0];
        if (!one) { body.replaceChildren(el('p', { class: 'muted' }, 'No difference.')); return; }
        notes.textContent = fileNotes(one).length ? ' (' + fileNotes(one).join(', ') + ')' : '';
        body.replaceChildren(...[fileContent(one)].flat().filter(Boolean));
      } catch (err) {
        body.replaceChildren(el('p', { class: 'error' }, 'Could not read this file: ' + (err.message || String(err))));
      }
    });
  } else {
    body.append(...[fileContent(f)].flat().filter(Boolean));
  }
  return el('section', { class: 'file-diff', 'data-path': f.path },
    el('h3', {}, el('span', { class: 'kind ' + f.kind }, f.kind), ' ',
      f.kind === 'deleted' ? el('span', {}, title) : link('file', { ws, rev, path: f.path }, title),
      notes, ' ', link('history', { ws, path: f.path }, 'history')),
    body);
}

/** Runs the deferred reads one after another, once the view is on the page. */
function runLater(later) {
  setTimeout(async () => { for (const job of later) await job(); }, 0);
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
  const later = [];
  let section = null;
  if (marked) {
    const tr = audit.querySelector?.(`tr[data-record="${CSS.escape(marked)}"]`);
    if (tr) tr.classList.add('marked');
  }
  section = el('section', { id: 'revision' },
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
    d.files.length ? layoutSwitch(() => section) : null,
    d.files.map((f) => fileBlock(ws, r.revision, f, later)));
  runLater(later);
  return section;
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
  let section = null;
  section = el('section', { id: 'pathdiff' },
    el('h1', {}, name(path), ': ', short(d.from), ' \u2192 ', short(d.to)),
    tabs(ws, 'tree'),
    el('p', {}, link('history', { ws, path }, 'all versions of this path')),
    d.files.length ? [layoutSwitch(() => section), d.files.map((f) => fileBlock(ws, d.to, f, []))]
      : el('p', { class: 'muted' }, 'No difference.'));
  return section;
}
