// The page: a router over the address's fragment (#view?params), one view at a time, and the
// live feed of the workspace shown (Server-Sent Events; each announcement is dispatched as a
// `supabash:change` event the views listen to).
import { el, parseHash, errorView, banner } from './dom.js';
import { forgetEarly } from './early.js';

// Each view's module is read when a view first needs it (early.js preloads the first one's).
const views = {
  workspaces: () => import('./workspaces.js').then((m) => m.showWorkspaces),
  ws: () => import('./timeline.js').then((m) => m.showTimeline),
  rev: () => import('./revision.js').then((m) => m.showRevision),
  audit: () => import('./revision.js').then((m) => m.showAudit),
  pathdiff: () => import('./revision.js').then((m) => m.showPathDiff),
  tree: () => import('./files.js').then((m) => m.showTree),
  file: () => import('./files.js').then((m) => m.showFile),
  history: () => import('./files.js').then((m) => m.showHistory),
  search: () => import('./search.js').then((m) => m.showSearch),
};

let feed = null;

/** Follows the change feed of `ws` (none when no workspace is shown). */
function follow(ws) {
  if (feed && feed.ws === ws) return;
  if (feed) feed.source.close();
  feed = null;
  const live = document.getElementById('live');
  live.className = 'live off';
  live.textContent = 'not live';
  if (!ws) return;
  const source = new EventSource('/api/ws/' + encodeURIComponent(ws) + '/events');
  feed = { ws, source };
  source.addEventListener('open', () => {
    live.className = 'live on';
    live.textContent = 'live';
    // Whatever was committed between the view's reads and the feed's start: views read on.
    window.dispatchEvent(new CustomEvent('supabash:change', { detail: { kind: 'commit' } }));
  });
  source.addEventListener('error', () => {
    live.className = 'live off';
    live.textContent = 'reconnecting';
  });
  source.addEventListener('lost', (e) => {
    live.className = 'live off';
    live.textContent = 'feed lost';
    banner('The change feed lost the database: ' + e.data + ' It tries again.');
  });
  source.addEventListener('change', (e) => {
    live.className = 'live on';
    live.textContent = 'live';
    banner('');
    let detail = null;
    try { detail = JSON.parse(e.data); } catch (err) { return; }
    window.dispatchEvent(new CustomEvent('supabash:change', { detail }));
  });
}

/** Where listeners of the previous view are removed. */
let cleanup = [];

/** Shows the view the address names. */
async function route() {
  for (const undo of cleanup) undo();
  cleanup = [];
  const { view, params } = parseHash();
  const main = document.getElementById('main');
  const load = views[view];
  const ctx = {
    /** Calls `fn` on each announcement while this view is shown. */
    onChange(fn) {
      const h = (e) => fn(e.detail);
      window.addEventListener('supabash:change', h);
      cleanup.push(() => window.removeEventListener('supabash:change', h));
    },
  };
  if (!load) {
    main.replaceChildren(el('p', { class: 'error' }, 'No such view.'));
    return;
  }
  const started = performance.now();
  main.setAttribute('aria-busy', 'true');
  try {
    const show = await load();
    const node = await show(params, ctx);
    main.replaceChildren(node);
  } catch (err) {
    main.replaceChildren(errorView(err, route));
  }
  main.removeAttribute('aria-busy');
  // What early.js asked for is for the first view only.
  forgetEarly();
  // The feed opens once the view is drawn, so its start does not delay the first render.
  follow(params.get('ws'));
  // For the browser benchmarks: how long this view took, and when (since navigation start).
  document.body.dataset.rendered = String(Math.round(performance.now() - started));
  document.body.dataset.renderedAt = String(Math.round(performance.now()));
}

window.addEventListener('hashchange', route);
route();
