// The first view's data, asked for while the page's code is still arriving. index.html loads
// this module `async` and it imports nothing, so it runs as soon as it is here, before the
// views' modules are all in; for the views whose first requests the address alone decides (a
// workspace's timeline, a directory) it asks for them at once, and it preloads the modules of
// the view the address names (app.js imports a view's module when the view is first shown).
// dom.js's api() takes an answer asked for here (once) instead of asking again; app.js forgets
// the rest after the first view.

const pending = new Map();

/** The query of `params` without empty values (as dom.js's query() leaves them out). */
function given(params) {
  return Object.entries(params)
    .filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => [k, String(v)]);
}

/** A request's key: its path and its parameters, sorted. */
function keyOf(path, params) {
  const q = given(params).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return path + '?' + new URLSearchParams(q).toString();
}

function ask(path, params) {
  const q = new URLSearchParams(given(params)).toString();
  const answer = fetch(path + (q ? '?' + q : ''), { headers: { accept: 'application/json' } });
  // Not taken (another view came first): its failure is nobody's.
  answer.catch(() => {});
  pending.set(keyOf(path, params), answer);
}

/** The response asked for early for this request, if any (each is taken once). */
export function takeEarly(path, params) {
  const key = keyOf(path, params);
  const answer = pending.get(key);
  pending.delete(key);
  return answer;
}

/** Drops what the first view did not take. */
export function forgetEarly() {
  pending.clear();
}

/** The modules each view needs beyond app.js and dom.js. */
const MODULES = {
  workspaces: ['workspaces.js'],
  ws: ['timeline.js'],
  rev: ['revision.js', 'diffview.js', 'highlight.js'],
  audit: ['revision.js', 'diffview.js', 'highlight.js'],
  pathdiff: ['revision.js', 'diffview.js', 'highlight.js'],
  tree: ['files.js', 'diffview.js', 'highlight.js'],
  file: ['files.js', 'diffview.js', 'highlight.js'],
  history: ['files.js', 'diffview.js', 'highlight.js'],
  search: ['search.js'],
};

const hash = location.hash.slice(1);
const at = hash.indexOf('?');
const view = at < 0 ? hash : hash.slice(0, at);
const p = new URLSearchParams(at < 0 ? '' : hash.slice(at + 1));
const ws = p.get('ws');
for (const name of MODULES[view || 'workspaces'] ?? []) {
  const link = document.createElement('link');
  link.rel = 'modulepreload';
  link.href = '/assets/' + name;
  document.head.append(link);
}
if (ws && view === 'ws') {
  const base = '/api/ws/' + encodeURIComponent(ws);
  ask(base, {});
  ask(base + '/timeline', { path: p.get('path') || '', actor: p.get('actor') || '', limit: 100 });
} else if (ws && view === 'tree') {
  ask('/api/ws/' + encodeURIComponent(ws) + '/tree', { path: p.get('path') || '/', rev: p.get('rev') || '' });
}
