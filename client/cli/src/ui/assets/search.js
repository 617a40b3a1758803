// Search the files of a revision on the server (supabash_grep), each match linked to its file.
import { el, api, link, tabs, hrefTo, name, shown } from './dom.js';

/** The search view (`#search?ws=ID&q=&rev=&fixed=&icase=`). */
export async function showSearch(params) {
  const ws = params.get('ws');
  const q = params.get('q') || '';
  const rev = params.get('rev') || '';
  const input = el('input', { name: 'q', placeholder: 'regular expression', value: q, id: 'q' });
  const fixed = el('input', { type: 'checkbox', id: 'fixed' });
  fixed.checked = params.get('fixed') === '1';
  const icase = el('input', { type: 'checkbox', id: 'icase' });
  icase.checked = params.get('icase') === '1';
  const go = () => {
    location.hash = hrefTo('search', { ws, q: input.value, rev, fixed: fixed.checked ? 1 : '', icase: icase.checked ? 1 : '' });
  };
  input.addEventListener('keydown', (e) => { if (e.key === 'Enter') go(); });
  const form = el('div', { class: 'filters' }, input,
    el('label', {}, fixed, ' literal'), el('label', {}, icase, ' ignore case'),
    el('button', { type: 'button', id: 'go', onclick: go }, 'Search'));
  const out = el('div', { id: 'results' });
  if (q) {
    const page = await api('/api/ws/' + encodeURIComponent(ws) + '/search',
      { q, rev, fixed: params.get('fixed'), icase: params.get('icase') });
    const at = page.revision || rev;
    out.append(el('p', { class: 'muted' }, `${page.matches.length} matching lines in ${page.filesSearched} files` +
      (page.nextCursor ? ' (the first page)' : '')));
    let last = null;
    for (const m of page.matches) {
      if (m.path !== last) {
        out.append(el('h3', {}, link('file', { ws, rev: at, path: m.path }, name(m.path))));
        last = m.path;
      }
      out.append(el('div', { class: 'match' }, el('span', { class: 'ln' }, String(m.line)), shown(m.text)));
    }
    for (const b of page.binaryMatches || []) out.append(el('div', { class: 'muted' }, 'Binary file ', name(b), ' matches'));
  }
  return el('section', { id: 'search' }, el('h1', {}, 'Search'), tabs(ws, 'search'), form, out);
}
