// Syntax highlighting for text files: a small tokenizer per language family (keywords,
// strings, comments, numbers), picked by the file's name. It answers tokens (a class and the
// text); the caller puts each in as a text node or a span's textContent, so content is never
// parsed as HTML. Multi-line comments and strings carry over from line to line in a state.

const words = (s) => new Set(s.split(' '));

const C_LIKE = 'if else for while do switch case default break continue return goto sizeof ' +
  'struct union enum typedef static const extern volatile inline void char short int long ' +
  'float double signed unsigned bool true false NULL nullptr class public private protected ' +
  'virtual override template typename namespace using new delete this throw try catch final ' +
  'import package interface extends implements abstract synchronized boolean byte instanceof ' +
  'super null var val fun object when is in out let func self Self nil string';

/** The languages: keywords, line comment, quote characters, multi-line [open, close, class]. */
const LANGS = {
  rust: {
    kw: words('as async await break const continue crate dyn else enum extern false fn for if impl ' +
      'in let loop match mod move mut pub ref return self Self static struct super trait true type ' +
      'unsafe use where while Some None Ok Err'),
    line: '//', quotes: '"', chars: true, blocks: [['/*', '*/', 'com']],
  },
  js: {
    kw: words('break case catch class const continue debugger default delete do else export extends ' +
      'finally for function if import in instanceof new return super switch this throw try typeof ' +
      'var void while with yield let static async await of true false null undefined interface ' +
      'type enum implements private public protected readonly as from declare namespace'),
    line: '//', quotes: '"\'', blocks: [['/*', '*/', 'com'], ['`', '`', 'str']],
  },
  python: {
    kw: words('False None True and as assert async await break class continue def del elif else ' +
      'except finally for from global if import in is lambda nonlocal not or pass raise return try ' +
      'while with yield self match case'),
    line: '#', quotes: '"\'', blocks: [['"""', '"""', 'str'], ["'''", "'''", 'str']],
  },
  shell: {
    kw: words('if then else elif fi for while until do done case esac in function return local ' +
      'export readonly set unset shift exit break continue echo cd true false'),
    line: '#', quotes: '"\'', blocks: [],
  },
  go: {
    kw: words('break case chan const continue default defer else fallthrough for func go goto if ' +
      'import interface map package range return select struct switch type var true false nil iota'),
    line: '//', quotes: '"\'', blocks: [['/*', '*/', 'com'], ['`', '`', 'str']],
  },
  c: { kw: words(C_LIKE), line: '//', quotes: '"\'', blocks: [['/*', '*/', 'com']] },
  css: { kw: words('important inherit initial none auto'), line: null, quotes: '"\'', blocks: [['/*', '*/', 'com']] },
  sql: {
    kw: words('select from where and or not insert into values update set delete create table ' +
      'alter drop index on join left right inner outer full cross group by order having limit ' +
      'offset as distinct union all case when then else end null is in exists between like ' +
      'primary key references foreign default returns return function language begin commit ' +
      'rollback with grant revoke to true false'),
    line: '--', quotes: '\'"', blocks: [['/*', '*/', 'com']], nocase: true,
  },
  conf: { kw: words('true false null yes no on off'), line: '#', quotes: '"\'', blocks: [['"""', '"""', 'str']] },
  json: { kw: words('true false null'), line: null, quotes: '"', blocks: [] },
  ruby: {
    kw: words('alias and begin break case class def defined? do else elsif end ensure false for if ' +
      'in module next nil not or redo rescue retry return self super then true undef unless until ' +
      'when while yield require attr_accessor'),
    line: '#', quotes: '"\'', blocks: [['=begin', '=end', 'com']],
  },
};

const BY_EXTENSION = {
  rs: 'rust', js: 'js', mjs: 'js', cjs: 'js', jsx: 'js', ts: 'js', tsx: 'js', py: 'python',
  sh: 'shell', bash: 'shell', zsh: 'shell', go: 'go', c: 'c', h: 'c', cc: 'c', cpp: 'c', cxx: 'c',
  hpp: 'c', java: 'c', cs: 'c', kt: 'c', swift: 'c', scala: 'c', css: 'css', sql: 'sql',
  toml: 'conf', yaml: 'conf', yml: 'conf', ini: 'conf', cfg: 'conf', env: 'conf', json: 'json',
  rb: 'ruby',
};

const BY_NAME = { Makefile: 'shell', Dockerfile: 'shell', Gemfile: 'ruby', Rakefile: 'ruby' };

/** The language of `path` (by its name or extension), or null: shown as plain text. */
export function languageOf(path) {
  const base = String(path ?? '').slice(String(path ?? '').lastIndexOf('/') + 1);
  if (BY_NAME[base]) return BY_NAME[base];
  const dot = base.lastIndexOf('.');
  return dot > 0 ? BY_EXTENSION[base.slice(dot + 1).toLowerCase()] ?? null : null;
}

const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The language's scanner: one global regular expression whose groups name the token. */
function scanner(lang) {
  if (lang.re) return lang.re;
  const parts = [];
  // Group 1: the opening of a multi-line block (its index found by comparing the text).
  parts.push(lang.blocks.length ? '(' + lang.blocks.map((b) => escapeRe(b[0])).join('|') + ')' : '(?!)');
  parts.push(lang.line ? '(' + escapeRe(lang.line) + '.*)' : '(?!)');
  const quotes = [...lang.quotes].map((q) => {
    const e = escapeRe(q);
    return `${e}(?:[^${e}\\\\]|\\\\.)*(?:${e}|$)`;
  });
  if (lang.chars) quotes.push("'(?:\\\\[^']{1,10}|[^'\\\\])'");
  parts.push(quotes.length ? '(' + quotes.join('|') + ')' : '(?!)');
  parts.push('(\\b(?:0[xXbBoO][\\da-fA-F_]+|\\d[\\d_]*(?:\\.\\d[\\d_]*)?(?:[eE][+-]?\\d+)?)\\w*)');
  parts.push('([A-Za-z_$][\\w$]*\\??)');
  lang.re = new RegExp(parts.join('|'), 'g');
  return lang.re;
}

/**
 * The tokens of one line: [[class or '', text], ...] and the state for the next line (the
 * open multi-line block's index, or -1). `lang` is a name from languageOf.
 */
export function tokenize(langName, line, state = -1) {
  const lang = LANGS[langName];
  if (!lang) return { tokens: [['', line]], state: -1 };
  const out = [];
  let plain = '';
  const push = (cls, text) => {
    if (!text) return;
    if (!cls) { plain += text; return; }
    if (plain) { out.push(['', plain]); plain = ''; }
    out.push([cls, text]);
  };
  let i = 0;
  if (state >= 0) {
    const [, close, cls] = lang.blocks[state];
    const end = line.indexOf(close);
    if (end < 0) return { tokens: [[cls, line]], state };
    push(cls, line.slice(0, end + close.length));
    i = end + close.length;
    state = -1;
  }
  const re = scanner(lang);
  re.lastIndex = i;
  let m;
  while ((m = re.exec(line)) !== null) {
    push('', line.slice(i, m.index));
    if (m[1] !== undefined) {
      const b = lang.blocks.findIndex((blk) => blk[0] === m[1]);
      const [open, close, cls] = lang.blocks[b];
      const end = line.indexOf(close, m.index + open.length);
      if (end < 0) { push(cls, line.slice(m.index)); state = b; i = line.length; break; }
      push(cls, line.slice(m.index, end + close.length));
      i = re.lastIndex = end + close.length;
      continue;
    }
    if (m[2] !== undefined) push('com', m[2]);
    else if (m[3] !== undefined) push('str', m[3]);
    else if (m[4] !== undefined) push('num', m[4]);
    else {
      const w = m[5];
      push(lang.kw.has(lang.nocase ? w.toLowerCase() : w) ? 'kw' : '', w);
    }
    i = re.lastIndex;
    if (m[0] === '') re.lastIndex = ++i;
  }
  push('', line.slice(i));
  if (plain) out.push(['', plain]);
  return { tokens: out, state };
}

/** The nodes of `tokens`: text nodes, and spans (class `tok-…`) whose textContent is set. */
export function tokenNodes(tokens) {
  return tokens.map(([cls, text]) => {
    if (!cls) return document.createTextNode(text);
    const s = document.createElement('span');
    s.className = 'tok-' + cls;
    s.textContent = text;
    return s;
  });
}
