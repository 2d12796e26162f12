// A small syntax highlighter: one scanner configured per language family
// (comments, strings, numbers, keywords, literals, types, function names).
// It returns escaped HTML: every character of the source is escaped, and
// the only markup is <span class="tok-...">.

export function escapeHTML(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

const words = (s) => new Set(s.split(/\s+/).filter(Boolean));

const C_LIKE = {
  line: ['//'], block: [['/*', '*/']], strings: ['"', "'"],
  literals: words('true false null nullptr NULL this self super'),
};

const LANGS = {
  javascript: {
    ...C_LIKE, strings: ['"', "'", '`'], multiline: ['`'],
    keywords: words(`async await break case catch class const continue debugger default delete do else export extends
      finally for from function if import in instanceof let new of return static switch throw try typeof var void while
      with yield get set as interface type enum implements declare readonly private public protected namespace keyof`),
    literals: words('true false null undefined NaN Infinity this super'),
    types: words('string number boolean any unknown never object Promise Array Map Set Record'),
  },
  go: {
    ...C_LIKE, strings: ['"', "'", '`'], multiline: ['`'],
    keywords: words(`break case chan const continue default defer else fallthrough for func go goto if import interface
      map package range return select struct switch type var`),
    literals: words('true false nil iota'),
    types: words(`bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string uint uint8
      uint16 uint32 uint64 uintptr any comparable`),
    builtins: words('append cap clear close copy delete len make max min new panic print println recover'),
  },
  python: {
    line: ['#'], block: [], strings: ['"""', "'''", '"', "'"], multiline: ['"""', "'''"],
    keywords: words(`and as assert async await break class continue def del elif else except finally for from global if
      import in is lambda nonlocal not or pass raise return try while with yield match case`),
    literals: words('True False None self cls'),
    types: words('int float str bool list dict set tuple bytes object'),
    builtins: words('print len range enumerate zip map filter open isinstance super sorted sum min max abs'),
  },
  bash: {
    line: ['#'], block: [], strings: ['"', "'"], variables: true,
    keywords: words(`if then else elif fi for while until do done case esac in function return local export set unset
      readonly shift exit source alias`),
    literals: words('true false'),
    builtins: words('echo cd ls cat grep sed awk curl go git make sudo apt-get printf read test mkdir rm cp mv'),
  },
  rust: {
    ...C_LIKE, charQuotes: true,
    keywords: words(`as async await break const continue crate dyn else enum extern fn for if impl in let loop match mod
      move mut pub ref return static struct trait type unsafe use where while`),
    literals: words('true false self Self None Some Ok Err'),
    types: words('i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str String Vec Option Result Box'),
  },
  java: {
    ...C_LIKE,
    keywords: words(`abstract break case catch class const continue default do else enum extends final finally for goto
      if implements import instanceof interface native new package private protected public return static switch
      synchronized throw throws try volatile while var val fun when object override namespace using struct union
      typedef template typename include define sizeof auto register extern inline virtual operator friend delete`),
    types: words('int long short byte char float double boolean void String bool string unsigned signed size_t'),
  },
  sql: {
    line: ['--'], block: [['/*', '*/']], strings: ["'", '"'], caseless: true,
    keywords: words(`select from where and or not insert into values update set delete create table index view drop alter
      add column primary key foreign references join left right inner outer on group by order having limit offset as
      distinct union all case when then else end returning with begin commit rollback if exists default unique in is
      like between`),
    literals: words('null true false'),
    types: words('int integer bigint text varchar boolean timestamp timestamptz jsonb json uuid real serial blob'),
  },
  css: {
    line: [], block: [['/*', '*/']], strings: ['"', "'"], css: true,
    keywords: words('@media @import @supports @keyframes @font-face !important'),
  },
  yaml: {
    line: ['#'], block: [], strings: ['"', "'"], yamlKeys: true,
    literals: words('true false null yes no on off ~'),
  },
  ruby: {
    line: ['#'], block: [], strings: ['"', "'"],
    keywords: words(`alias and begin break case class def defined do else elsif end ensure for if in module next not or
      redo rescue retry return self super then undef unless until when while yield require attr_accessor`),
    literals: words('true false nil'),
  },
  json: { line: [], block: [], strings: ['"'], jsonKeys: true, literals: words('true false null') },
};

const ALIASES = {
  js: 'javascript', jsx: 'javascript', mjs: 'javascript', ts: 'javascript', tsx: 'javascript', typescript: 'javascript',
  node: 'javascript', golang: 'go', py: 'python', python3: 'python', sh: 'bash', shell: 'bash', zsh: 'bash',
  console: 'bash', shellsession: 'bash', rs: 'rust', c: 'java', h: 'java', cpp: 'java', 'c++': 'java', cc: 'java',
  cs: 'java', csharp: 'java', kotlin: 'java', kt: 'java', swift: 'java', scala: 'java', php: 'java', dart: 'java',
  postgres: 'sql', postgresql: 'sql', sqlite: 'sql', mysql: 'sql', scss: 'css', less: 'css', yml: 'yaml', toml: 'yaml',
  rb: 'ruby', jsonc: 'json', json5: 'json',
};

// languageOf maps a fence label to a key of LANGS, or ''. The label is
// the message author's text, so it is looked up as an own property only:
// "constructor" or "__proto__" must not reach Object.prototype.
export function languageOf(name) {
  const n = String(name || '').toLowerCase();
  if (Object.hasOwn(LANGS, n)) return n;
  return Object.hasOwn(ALIASES, n) ? ALIASES[n] : '';
}

// highlight returns escaped HTML for code in language lang.
export function highlight(code, lang) {
  const name = languageOf(lang);
  if (String(lang).toLowerCase() === 'diff' || String(lang).toLowerCase() === 'patch') return highlightDiff(code);
  if (['html', 'xml', 'svg', 'vue'].includes(String(lang).toLowerCase())) return highlightMarkup(code);
  if (!name) return escapeHTML(code);
  return scan(code, LANGS[name]);
}

const span = (cls, text) => `<span class="tok-${cls}">${escapeHTML(text)}</span>`;

function scan(src, L) {
  let out = '';
  let i = 0;
  let plain = '';
  const flush = () => {
    if (plain) out += escapeHTML(plain);
    plain = '';
  };
  const emit = (cls, text) => {
    flush();
    out += span(cls, text);
  };
  const atLineStart = () => i === 0 || src[i - 1] === '\n';
  while (i < src.length) {
    const rest = src.slice(i, i + 3);
    const c = src[i];
    let m;
    // Comments.
    const line = L.line.find((p) => src.startsWith(p, i));
    if (line && !(line === '#' && L.variables && src[i - 1] === '$')) {
      let end = src.indexOf('\n', i);
      if (end < 0) end = src.length;
      emit('comment', src.slice(i, end));
      i = end;
      continue;
    }
    const block = L.block.find(([open]) => src.startsWith(open, i));
    if (block) {
      let end = src.indexOf(block[1], i + block[0].length);
      end = end < 0 ? src.length : end + block[1].length;
      emit('comment', src.slice(i, end));
      i = end;
      continue;
    }
    // Strings.
    const q = L.strings.find((s) => src.startsWith(s, i));
    if (q && !(q === "'" && L.charQuotes && !/^'(\\.|[^\\'])'/.test(src.slice(i, i + 4)))) {
      const multi = (L.multiline || []).includes(q) || q.length === 3;
      let j = i + q.length;
      while (j < src.length) {
        if (src[j] === '\\' && q !== '`') { j += 2; continue; }
        if (src.startsWith(q, j)) { j += q.length; break; }
        if (src[j] === '\n' && !multi) break;
        j++;
      }
      const text = src.slice(i, Math.min(j, src.length));
      const isKey = (L.jsonKeys || L.yamlKeys) && /^\s*:/.test(src.slice(j, j + 8));
      emit(isKey ? 'key' : 'string', text);
      i = Math.min(j, src.length);
      continue;
    }
    // YAML keys at line start.
    if (L.yamlKeys && atLineStartIgnoringSpace(src, i) && (m = /^[\w.-]+(?=\s*:(\s|$))/.exec(src.slice(i)))) {
      emit('key', m[0]);
      i += m[0].length;
      continue;
    }
    // Numbers.
    if (/[0-9]/.test(c) && !/[\w$]/.test(src[i - 1] || '') &&
      (m = /^(0[xX][0-9a-fA-F_]+|0[bB][01_]+|\d[\d_]*(\.\d+)?([eE][+-]?\d+)?)[a-zA-Z]*/.exec(src.slice(i)))) {
      emit('number', m[0]);
      i += m[0].length;
      continue;
    }
    // Shell variables.
    if (L.variables && c === '$' && (m = /^\$(\{[^}\n]*\}|[\w@#?*!-]+)/.exec(src.slice(i)))) {
      emit('variable', m[0]);
      i += m[0].length;
      continue;
    }
    // CSS: properties and selectors stay plain; at-rules and hex colours.
    if (L.css && (m = /^(@[\w-]+|#[0-9a-fA-F]{3,8}\b)/.exec(src.slice(i)))) {
      emit(m[0][0] === '@' ? 'keyword' : 'number', m[0]);
      i += m[0].length;
      continue;
    }
    if (L.css && (m = /^[\w-]+(?=\s*:[^:{]*;)/.exec(src.slice(i))) && !/[\w-]/.test(src[i - 1] || '')) {
      emit('key', m[0]);
      i += m[0].length;
      continue;
    }
    // Identifiers.
    if (/[A-Za-z_$@]/.test(c) && !/[\w$]/.test(src[i - 1] || '') && (m = /^[A-Za-z_$@][\w$]*/.exec(src.slice(i)))) {
      const w = m[0];
      const k = L.caseless ? w.toLowerCase() : w;
      let cls = '';
      if (L.keywords && L.keywords.has(k)) cls = 'keyword';
      else if (L.literals && L.literals.has(k)) cls = 'literal';
      else if (L.types && L.types.has(k)) cls = 'type';
      else if (L.builtins && L.builtins.has(k)) cls = 'builtin';
      else if (/^\s*\(/.test(src.slice(i + w.length, i + w.length + 4)) && !L.yamlKeys) cls = 'function';
      if (cls) emit(cls, w);
      else plain += w;
      i += w.length;
      continue;
    }
    plain += rest[0];
    i++;
  }
  flush();
  return out;
}

function atLineStartIgnoringSpace(src, i) {
  let j = i - 1;
  while (j >= 0 && (src[j] === ' ' || src[j] === '\t' || src[j] === '-')) j--;
  return j < 0 || src[j] === '\n';
}

function highlightDiff(code) {
  return code.split('\n').map((line) => {
    if (/^(\+\+\+|---)/.test(line)) return span('comment', line);
    if (line.startsWith('+')) return span('inserted', line);
    if (line.startsWith('-')) return span('deleted', line);
    if (line.startsWith('@@')) return span('keyword', line);
    return escapeHTML(line);
  }).join('\n');
}

function highlightMarkup(code) {
  let out = '';
  let last = 0;
  const re = /<!--[\s\S]*?(-->|$)|<\/?[A-Za-z][\w:-]*|\/?>|"[^"]*"|'[^']*'/g;
  let inTag = false;
  for (let m; (m = re.exec(code));) {
    let text = code.slice(last, m.index);
    if (inTag) {
      // Escaped text has no markup, and entities end in ";", never "=".
      out += escapeHTML(text).replace(/([\w:-]+)(?==)/g, '<span class="tok-key">$1</span>');
    } else {
      out += escapeHTML(text);
    }
    const t = m[0];
    if (t.startsWith('<!--')) out += span('comment', t);
    else if (t.startsWith('<')) { out += span('keyword', t); inTag = true; }
    else if (t.endsWith('>')) { out += span('keyword', t); inTag = false; }
    else if (inTag) out += span('string', t);
    else out += escapeHTML(t);
    last = m.index + t.length;
  }
  return out + escapeHTML(code.slice(last));
}
