// DOM helpers. Every name, path and content is attacker-controlled (agents write them): text
// goes in with textContent only, links are built here from encoded query parameters and always
// start with '#' or '/api/', and nothing is ever parsed as HTML.
import { takeEarly } from './early.js';

/** An element with attributes (event handlers for on* keys) and children (strings become text). */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

/** The query string of `params` (empty values left out). */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== null && v !== undefined && v !== '') q.set(k, String(v));
  }
  return q.toString();
}

/** The address of a view of the page. */
export function hrefTo(view, params = {}) {
  return '#' + view + '?' + query(params);
}

/** A link to a view. */
export function link(view, params, ...children) {
  return el('a', { href: hrefTo(view, params) }, ...children);
}

/** The view and parameters the address names. */
export function parseHash() {
  const h = location.hash.slice(1);
  const i = h.indexOf('?');
  const view = i < 0 ? h : h.slice(0, i);
  return { view: view || 'workspaces', params: new URLSearchParams(i < 0 ? '' : h.slice(i + 1)) };
}

/** Bidirectional and other invisible control characters made visible (`<U+202E>`). */
export function name(text) {
  return String(text ?? '').replace(/[\u0000-\u001f\u007f\u200b-\u200f\u202a-\u202e\u2066-\u2069\u061c\ufeff]/g,
    (c) => '<U+' + c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0') + '>');
}

/** File text with bidirectional and zero-width characters made visible (tabs kept). */
export function shown(text) {
  return String(text ?? '').replace(/[\u200b-\u200f\u202a-\u202e\u2066-\u2069\u061c\ufeff]/g,
    (c) => '<U+' + c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0') + '>');
}

/** The first characters of an id. */
export function short(id) {
  return id ? String(id).slice(0, 8) : '';
}

/** A byte count for people. */
export function bytes(n) {
  if (n === null || n === undefined) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = Number(n), u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return (u === 0 ? String(v) : v.toFixed(1)) + ' ' + units[u];
}

/** An error of the API: its HTTP status, code and message. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Shows (or with no message hides) the banner under the header. */
export function banner(message) {
  const b = document.getElementById('banner');
  b.hidden = !message;
  b.textContent = message || '';
}

/** The JSON answer of an API route (asked for by early.js, or now); errors thrown as ApiError. */
export async function api(path, params = {}) {
  const q = query(params);
  let res;
  try {
    res = await (takeEarly(path, params) || fetch(path + (q ? '?' + q : ''), { headers: { accept: 'application/json' } }));
  } catch (e) {
    banner('The viewer is not answering (is `supabash ui` still running?).');
    throw new ApiError(0, 'UNREACHABLE', 'the viewer is not answering');
  }
  let body = null;
  try { body = await res.json(); } catch (e) { body = null; }
  if (!res.ok) {
    const err = body && body.error ? body.error : { code: String(res.status), message: res.statusText };
    if (res.status === 503 || res.status === 502) {
      banner('Lost the connection to the database: ' + err.message + ' The next request tries again.');
    }
    throw new ApiError(res.status, err.code, err.message);
  }
  banner('');
  return body;
}

/** What an error means to a person, as a block of the page (with a retry button). */
export function errorView(err, retry) {
  const code = err.code || '';
  let title = 'Something went wrong';
  if (code === 'REVISION_NOT_FOUND') title = 'No such revision: it never existed, or purge removed it';
  else if (code === 'NOT_FOUND') title = 'Not found: an unknown or deleted workspace, or a path that is not there';
  else if (code === 'REDACTED') title = 'Redacted: this version\u2019s content was removed';
  else if (err.status === 401 || err.status === 403) title = 'Refused: your identity may not read this';
  else if (err.status === 503 || err.status === 502 || err.status === 0) title = 'Lost the connection to the database';
  return el('div', { class: 'error', role: 'alert' },
    el('h2', {}, title),
    el('p', {}, el('code', {}, code), ' ', err.message || String(err)),
    retry ? el('button', { type: 'button', onclick: retry }, 'Try again') : null);
}

/** The tabs of a workspace's views. */
export function tabs(ws, active) {
  const items = [['ws', 'Timeline'], ['tree', 'Files'], ['search', 'Search'], ['audit', 'Audit trail']];
  return el('nav', { class: 'tabs' }, items.map(([view, label]) =>
    el('a', { href: hrefTo(view, { ws }), class: view === active ? 'active' : '' }, label)));
}

/** A table with a header row. */
export function table(headers, rows, attrs = {}) {
  return el('table', attrs,
    el('thead', {}, el('tr', {}, headers.map((h) => el('th', {}, h)))),
    el('tbody', {}, rows));
}
