// A small, safe markdown renderer for assistant messages.
//
// Safety comes from construction: the input is never parsed as HTML. Every
// character of the source reaches the output through escapeHTML, and the
// only tags are the ones this file writes (p, h1-h6, ul/ol/li, blockquote,
// table, pre/code, a, em, strong, del, br, hr, and the placeholders below).
// Links keep only http(s) and mailto URLs; anything else (javascript:, data:,
// relative) renders as text.
//
// Math and diagrams are left for rich.js, as escaped source in placeholders:
// math spans (mathspan.js says which) as <span|div class="math …">TeX</…>,
// a closed ```mermaid fence as <div class="mermaid-block"> around its code
// block (an unclosed one, still streaming, is an ordinary code block).
//
// It renders partial input too (a reply still streaming): an unclosed code
// fence runs to the end, an unclosed emphasis stays literal.

import { escapeHTML as esc, highlight } from './highlight.js';
import { inlineMath, displayBlock, opensDisplayBlock } from './mathspan.js';

const LIST_RE = /^( *)([-*+]|\d{1,9}[.)])( +|$)(.*)$/;
const FENCE_RE = /^ {0,3}(`{3,}|~{3,})[ \t]*([^\s`{]*)[^`]*$/;
const HEADING_RE = /^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;
const HR_RE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE_RE = /^ {0,3}>/;
const DELIM_CELL_RE = /^ *:?-+:? *$/;
const SEARCH_WINDOW = 4000; // how far an emphasis or link looks for its end
// How deep quotes, lists, links and emphasis nest before the rest renders as
// plain text: a hostile reply of thousands of "> " or indented "- " levels
// would otherwise exhaust the stack (and take quadratic time) and the whole
// message would not render.
const MAX_DEPTH = 32;

const COPY_ICON = '<svg class="icon" viewBox="0 0 24 24" aria-hidden="true"><path d="M9 9h10v10H9zM5 15V5h10"/></svg>';

// renderMarkdown returns HTML for markdown text.
export function renderMarkdown(src) {
  const lines = String(src || '').replace(/\r\n?/g, '\n').split('\n');
  return blocks(expandTabs(lines), false);
}

// expandTabs counts a tab as four spaces for the markdown structure (list
// and quote indentation), but leaves the lines inside a fenced code block as
// they are: code is shown and copied byte for byte (a Makefile needs its
// tabs). A fence is found after any list or quote markers, as blocks finds
// it once those are stripped.
function expandTabs(lines) {
  let close = null;
  return lines.map((raw) => {
    const line = raw.replace(/\t/g, '    ');
    const bare = line.replace(/^(?:\s*(?:>|[-*+](?= )|\d{1,9}[.)](?= )))*\s*/, '');
    if (close) {
      if (close.test(bare)) close = null;
      return close ? raw : line;
    }
    const m = /^(`{3,}|~{3,})[ \t]*[^`]*$/.exec(bare);
    if (m) close = new RegExp(`^${m[1][0] === '`' ? '`' : '~'}{${m[1].length},}[ \\t]*$`);
    return line;
  });
}

const blank = (l) => /^\s*$/.test(l);

function isTableStart(lines, i) {
  if (i + 1 >= lines.length || !lines[i].includes('|')) return false;
  const d = lines[i + 1];
  if (!d.includes('-')) return false;
  const cells = splitRow(d);
  return cells.length > 0 && cells.every((c) => DELIM_CELL_RE.test(c)) && (d.includes('|') || cells.length > 1);
}

function startsBlock(lines, i) {
  const l = lines[i];
  return FENCE_RE.test(l) || HEADING_RE.test(l) || HR_RE.test(l) || QUOTE_RE.test(l) ||
    isTableStart(lines, i) || opensDisplayBlock(lines, i) || (LIST_RE.test(l) && !blank(LIST_RE.exec(l)[4]));
}

// flat renders lines as one escaped paragraph, past MAX_DEPTH.
function flat(lines, tight) {
  const text = lines.map((l) => esc(l.trim())).filter(Boolean).join('<br>');
  return tight ? text : `<p>${text}</p>`;
}

function blocks(lines, tight, depth = 0) {
  if (depth > MAX_DEPTH) return flat(lines, tight);
  let out = '';
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (blank(line)) {
      i++;
      continue;
    }
    if ((m = FENCE_RE.exec(line))) {
      const fence = m[1];
      const close = new RegExp(`^ {0,3}${fence[0] === '`' ? '`' : '~'}{${fence.length},}[ \\t]*$`);
      const indent = /^ */.exec(line)[0].length;
      const body = [];
      let closed = false;
      for (i++; i < lines.length; i++) {
        if (close.test(lines[i])) {
          i++;
          closed = true;
          break;
        }
        body.push(lines[i].replace(new RegExp(`^ {0,${indent}}`), ''));
      }
      const code = codeBlock(body.join('\n'), m[2]);
      out += closed && m[2].toLowerCase() === 'mermaid' && body.some((l) => !blank(l)) ? `<div class="mermaid-block">${code}</div>` : code;
      continue;
    }
    if ((m = displayBlock(lines, i))) {
      out += m.pending ? `<p class="math-pending">${lines.slice(i).map((l) => esc(l.trim())).join('<br>')}</p>` : `<div class="math math-display">${esc(m.tex)}</div>`;
      i = m.end;
      continue;
    }
    if ((m = HEADING_RE.exec(line))) {
      const n = m[1].length;
      out += `<h${n}>${inline(m[2])}</h${n}>`;
      i++;
      continue;
    }
    if (HR_RE.test(line)) {
      out += '<hr>';
      i++;
      continue;
    }
    if (QUOTE_RE.test(line)) {
      const body = [];
      while (i < lines.length && (QUOTE_RE.test(lines[i]) || (!blank(lines[i]) && body.length && !blank(body[body.length - 1]) && !startsBlock(lines, i)))) {
        body.push(lines[i].replace(/^ {0,3}> ?/, ''));
        i++;
      }
      out += `<blockquote>${blocks(body, false, depth + 1)}</blockquote>`;
      continue;
    }
    if (isTableStart(lines, i)) {
      const [html, next] = table(lines, i);
      out += html;
      i = next;
      continue;
    }
    if (LIST_RE.test(line)) {
      const [html, next] = list(lines, i, depth);
      out += html;
      i = next;
      continue;
    }
    const para = [line.trim()];
    for (i++; i < lines.length && !blank(lines[i]) && !startsBlock(lines, i); i++) para.push(lines[i].trim());
    const text = inline(para.join('\n'));
    out += tight ? text : `<p>${text}</p>`;
  }
  return out;
}

function list(lines, i, depth) {
  const first = LIST_RE.exec(lines[i]);
  const ordered = /\d/.test(first[2]);
  const base = first[1].length;
  const items = [];
  let loose = false;
  while (i < lines.length) {
    const m = LIST_RE.exec(lines[i]);
    if (!m || m[1].length > base + 1 || /\d/.test(m[2]) !== ordered) break;
    const pad = m[3].length > 4 ? 1 : Math.max(1, m[3].length);
    const contentIndent = m[1].length + m[2].length + pad;
    const nestIndent = Math.min(contentIndent, base + 2);
    const body = [m[4]];
    let sawBlank = false;
    for (i++; i < lines.length; i++) {
      const l = lines[i];
      if (blank(l)) {
        sawBlank = true;
        body.push('');
        continue;
      }
      const indent = /^ */.exec(l)[0].length;
      if (indent >= nestIndent) {
        if (sawBlank) loose = loose || !LIST_RE.test(l.slice(Math.min(indent, contentIndent)));
        body.push(l.slice(Math.min(indent, contentIndent)));
        sawBlank = false;
        continue;
      }
      if (sawBlank || startsBlock(lines, i)) break;
      body.push(l.trim()); // lazy continuation of the item's paragraph
    }
    while (body.length && blank(body[body.length - 1])) body.pop();
    const sib = i < lines.length ? LIST_RE.exec(lines[i]) : null;
    if (sawBlank && sib && sib[1].length <= base + 1 && /\d/.test(sib[2]) === ordered) loose = true;
    items.push({ body, num: ordered ? parseInt(m[2], 10) : 0 });
  }
  let html = '';
  for (const it of items) {
    let content = blocks(it.body, !loose, depth + 1);
    let cls = '';
    const task = /^\[([ xX])\] /.exec(it.body[0] || '');
    if (task) {
      const done = task[1] !== ' ';
      content = content.replace(/^(<p>)?\[[ xX]\] /, (_, p) => `${p || ''}<span class="task${done ? ' done' : ''}" aria-label="${done ? 'done' : 'to do'}">${done ? '☑' : '☐'}</span> `);
      cls = ' class="task-item"';
    }
    html += `<li${cls}>${content}</li>`;
  }
  if (ordered) {
    const start = items[0].num;
    return [`<ol${start !== 1 ? ` start="${start}"` : ''}>${html}</ol>`, i];
  }
  return [`<ul>${html}</ul>`, i];
}

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const cells = [];
  let cur = '';
  let code = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '\\' && s[i + 1] === '|') {
      cur += '|';
      i++;
    } else if (c === '`') {
      code = !code;
      cur += c;
    } else if (c === '|' && !code) {
      cells.push(cur.trim());
      cur = '';
    } else cur += c;
  }
  cells.push(cur.trim());
  return cells;
}

function table(lines, i) {
  const head = splitRow(lines[i]);
  const aligns = splitRow(lines[i + 1]).map((c) => {
    const l = c.startsWith(':'), r = c.endsWith(':');
    return l && r ? 'center' : r ? 'right' : '';
  });
  const cell = (tag, text, k) => {
    const a = aligns[k] ? ` class="al-${aligns[k]}"` : '';
    return `<${tag}${a}>${inline(text || '')}</${tag}>`;
  };
  let html = '<div class="table-wrap"><table><thead><tr>' + head.map((c, k) => cell('th', c, k)).join('') + '</tr></thead><tbody>';
  for (i += 2; i < lines.length && !blank(lines[i]) && lines[i].includes('|'); i++) {
    const row = splitRow(lines[i]);
    html += '<tr>' + head.map((_, k) => cell('td', row[k], k)).join('') + '</tr>';
  }
  return [html + '</tbody></table></div>', i];
}

function codeBlock(code, lang) {
  const label = esc(lang || 'text');
  return `<div class="codeblock"><div class="codeblock-head"><span class="codeblock-lang">${label}</span>` +
    `<button type="button" class="codeblock-copy" data-copy-code aria-label="Copy code">${COPY_ICON}<span class="label">Copy</span></button></div>` +
    `<pre tabindex="0"><code>${highlight(code, lang)}</code></pre></div>`;
}

// safeHref returns url when its scheme is http, https or mailto, else null.
// Control characters and spaces are dropped first, as browsers do, so
// "java\tscript:" cannot slip through.
export function safeHref(url) {
  const u = String(url).replace(/[\u0000-\u0020\u007f-\u009f]/g, '');
  return /^(https?:\/\/|mailto:)/i.test(u) ? u : null;
}

function link(href, html, title) {
  const t = title ? ` title="${esc(title)}"` : '';
  return `<a href="${esc(href)}"${t} target="_blank" rel="noopener noreferrer nofollow">${html}</a>`;
}

// parseLink reads "[text](url "title")" at src[i] === '['.
function parseLink(src, i) {
  let depth = 0;
  let j = i;
  const limit = Math.min(src.length, i + SEARCH_WINDOW);
  for (; j < limit; j++) {
    const c = src[j];
    if (c === '\\') { j++; continue; }
    if (c === '`') {
      const end = src.indexOf('`', j + 1);
      if (end > 0) j = end;
      continue;
    }
    if (c === '[') depth++;
    else if (c === ']' && --depth === 0) break;
  }
  if (j >= limit || src[j + 1] !== '(') return null;
  const text = src.slice(i + 1, j);
  let k = j + 2;
  while (src[k] === ' ') k++;
  let url = '';
  if (src[k] === '<') {
    const end = src.indexOf('>', k);
    if (end < 0) return null;
    url = src.slice(k + 1, end);
    k = end + 1;
  } else {
    let parens = 0;
    for (; k < src.length && !/\s/.test(src[k]); k++) {
      if (src[k] === '(') parens++;
      else if (src[k] === ')' && parens-- === 0) break;
      url += src[k];
    }
  }
  while (src[k] === ' ') k++;
  let title = '';
  const q = src[k];
  if (q === '"' || q === "'") {
    const end = src.indexOf(q, k + 1);
    if (end < 0) return null;
    title = src.slice(k + 1, end);
    k = end + 1;
    while (src[k] === ' ') k++;
  }
  if (src[k] !== ')') return null;
  return { text, url, title, end: k + 1 };
}

// findClose finds the closing delimiter run of exactly n chars c after from.
function findClose(src, c, n, from) {
  const delim = c.repeat(n);
  const limit = Math.min(src.length, from + SEARCH_WINDOW);
  for (let j = src.indexOf(delim, from); j >= 0 && j < limit; j = src.indexOf(delim, j + 1)) {
    if (/\s/.test(src[j - 1]) || src[j - 1] === c || src[j + n] === c) continue;
    if (c === '_' && /[\p{L}\p{N}]/u.test(src[j + n] || '')) continue;
    return j;
  }
  return -1;
}

// inline renders a paragraph's text; depth counts the links and emphasis
// around it.
export function inline(src, depth = 0) {
  if (depth > MAX_DEPTH) return esc(src);
  let out = '';
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    let m;
    if ((c === '$' || (c === '\\' && (src[i + 1] === '(' || src[i + 1] === '['))) && (m = inlineMath(src, i))) {
      out += m.display ? `<span class="math math-display">${esc(m.tex)}</span>` : `<span class="math math-inline">${esc(m.tex)}</span>`;
      i = m.end;
      continue;
    }
    if (c === '\\' && /[\\`*_{}[\]()#+\-.!|~<>$]/.test(src[i + 1] || '')) {
      out += esc(src[i + 1]);
      i += 2;
      continue;
    }
    if (c === '\\' && src[i + 1] === '\n') {
      out += '<br>';
      i += 2;
      continue;
    }
    if (c === '`') {
      let n = 1;
      while (src[i + n] === '`') n++;
      const delim = '`'.repeat(n);
      let j = src.indexOf(delim, i + n);
      while (j >= 0 && src[j + n] === '`') {
        let k = j;
        while (src[k] === '`') k++;
        j = src.indexOf(delim, k);
      }
      if (j < 0) {
        out += esc(delim);
        i += n;
        continue;
      }
      let code = src.slice(i + n, j).replace(/\n/g, ' ');
      if (/^ .*[^ ].* $/.test(code)) code = code.slice(1, -1);
      out += `<code>${esc(code)}</code>`;
      i = j + n;
      continue;
    }
    if (c === '!' && src[i + 1] === '[') {
      const l = parseLink(src, i + 1);
      if (l) {
        const href = safeHref(l.url);
        const alt = esc(l.text || 'image');
        out += href ? link(href, `<span class="img-link">🖼 ${alt}</span>`, l.title) : alt;
        i = l.end;
        continue;
      }
    }
    if (c === '[') {
      const l = parseLink(src, i);
      if (l) {
        const href = safeHref(l.url);
        out += href ? link(href, inline(l.text, depth + 1), l.title) : inline(l.text, depth + 1);
        i = l.end;
        continue;
      }
    }
    if (c === '<' && (m = /^<((?:https?:\/\/|mailto:)[^\s<>]+)>/i.exec(src.slice(i, i + 2048)))) {
      const href = safeHref(m[1]);
      out += href ? link(href, esc(m[1])) : esc(m[0]);
      i += m[0].length;
      continue;
    }
    if ((c === 'h' || c === 'H') && !/[\w/]/.test(src[i - 1] || '') &&
      (m = /^https?:\/\/[^\s<>"'`]*[^\s<>"'`.,:;!?)\]*_~]/i.exec(src.slice(i, i + 2048)))) {
      out += link(m[0], esc(m[0]));
      i += m[0].length;
      continue;
    }
    if (c === '*' || c === '_' || (c === '~' && src[i + 1] === '~')) {
      let n = 1;
      while (src[i + n] === c) n++;
      const prev = src[i - 1] || ' ';
      const next = src[i + n] || ' ';
      const canOpen = n <= 3 && !/\s/.test(next) && !(c === '_' && /[\p{L}\p{N}]/u.test(prev)) && (c !== '~' || n === 2);
      const j = canOpen ? findClose(src, c, n, i + n) : -1;
      if (j > i + n) {
        const inner = inline(src.slice(i + n, j), depth + 1);
        if (c === '~') out += `<del>${inner}</del>`;
        else if (n === 1) out += `<em>${inner}</em>`;
        else if (n === 2) out += `<strong>${inner}</strong>`;
        else out += `<strong><em>${inner}</em></strong>`;
        i = j + n;
        continue;
      }
      out += esc(c.repeat(n));
      i += n;
      continue;
    }
    if (c === '\n') {
      out = out.replace(/ +$/, '');
      out += '<br>';
      i++;
      continue;
    }
    // Plain text up to the next character that may start something.
    m = /^[^\\`![<hH*_~\n$]+/.exec(src.slice(i, i + 4096));
    const text = m ? m[0] : c;
    out += esc(text);
    i += text.length;
  }
  return out;
}

// renderPlain is a user message: text with line breaks, linkified, no markdown.
export function renderPlain(src) {
  let out = '';
  const re = /https?:\/\/[^\s<>"'`]*[^\s<>"'`.,:;!?)\]]/gi;
  let last = 0;
  for (let m; (m = re.exec(src));) {
    out += esc(src.slice(last, m.index)) + link(m[0], esc(m[0]));
    last = m.index + m[0].length;
  }
  return out + esc(src.slice(last));
}
