// Where the math is in a message's markdown (pure: no DOM, unit-tested in
// web/test/mathspan.test.mjs). markdown.js asks here before its own
// inline rules run, so a math span is taken whole and its text never
// reaches the emphasis, link or escape rules (a_1*b_2* stays math).
// rich.js later typesets the spans with KaTeX.
//
// The delimiters, as common renderers (pandoc, GitHub, ChatGPT) read them:
//
//   $$…$$   display math; inline in a paragraph, or as a block whose first
//           line starts with $$ and whose last line ends with $$.
//   \[…\]   display math, likewise (inline, or a block of lines).
//   \(…\)   inline math.
//   $…$     inline math, only when the opening $ is followed by a
//           non-space, the closing $ is the first unescaped $ after it,
//           is preceded by a non-space and is not followed by a digit.
//           So "$5 and $10" stays text (the first $ after "$5" follows a
//           space), as does "US$5 or US$10" (that $ is followed by a digit).
//           An inline span holds no backtick and no blank line.
//
// \$ is a literal dollar. A $ inside a code span or a code block is code:
// markdown.js reads code spans and fences first, so it never asks here.
// The content of a span must not be blank; an unclosed delimiter is text
// (a reply still streaming shows its math once the span is closed).

export const MATH_WINDOW = 4000; // how far a span looks for its end

// inlineMath reads a math span starting at src[i] (one of '$' or '\'),
// returning {tex, display, end} or null when there is none.
export function inlineMath(src, i) {
  const c = src[i];
  if (c === '\\') {
    const n = src[i + 1];
    if (n !== '(' && n !== '[') return null;
    const close = n === '(' ? '\\)' : '\\]';
    const j = src.indexOf(close, i + 2);
    if (j < 0 || j - i > MATH_WINDOW) return null;
    const tex = src.slice(i + 2, j);
    if (!tex.trim() || /\n[ \t]*\n/.test(tex)) return null;
    return { tex: tex.trim(), display: n === '[', end: j + 2 };
  }
  if (c !== '$') return null;
  if (src[i + 1] === '$') {
    const j = src.indexOf('$$', i + 2);
    if (j < 0 || j - i > MATH_WINDOW) return null;
    const tex = src.slice(i + 2, j);
    if (!tex.trim() || /\n[ \t]*\n/.test(tex)) return null;
    return { tex: tex.trim(), display: true, end: j + 2 };
  }
  const first = src[i + 1];
  if (first === undefined || /\s/.test(first)) return null;
  const j = closingDollar(src, i + 1);
  if (j < 0 || j - i > MATH_WINDOW) return null;
  const tex = src.slice(i + 1, j);
  if (!tex || /\s/.test(src[j - 1]) || /[0-9]/.test(src[j + 1] || '')) return null;
  if (tex.includes('`') || /\n[ \t]*\n/.test(tex)) return null;
  return { tex, display: false, end: j + 1 };
}

// closingDollar is the index of the first unescaped $ at or after from, or -1.
function closingDollar(src, from) {
  for (let j = from; j < src.length; j++) {
    if (src[j] === '\\') j++;
    else if (src[j] === '$') return j;
  }
  return -1;
}

// OPEN_BLOCK_RE: a line that may open a display block ($$ or \[ first).
const OPEN_BLOCK_RE = /^ {0,3}(\$\$|\\\[)/;

// displayBlock reads a display math block starting at lines[i]: its first
// line starts with $$ (or \[), and the first line after the opener that
// holds the closer ($$ or \]) ends with it. It returns {tex, end} (end:
// the index after the block's last line), {pending: true, end} when the
// block is not closed (yet: a streaming reply), or null when lines[i]
// opens no block (a closer in the middle of a line: an inline span).
export function displayBlock(lines, i) {
  const m = OPEN_BLOCK_RE.exec(lines[i]);
  if (!m) return null;
  const close = m[1] === '$$' ? '$$' : '\\]';
  const first = lines[i].slice(m[0].length);
  const parts = [];
  let rest = first;
  for (let k = i; k < lines.length; k++) {
    if (k > i) rest = lines[k];
    const j = rest.indexOf(close);
    if (j < 0) {
      parts.push(rest);
      continue;
    }
    if (rest.slice(j + close.length).trim()) return null; // text after the closer: inline math
    parts.push(rest.slice(0, j));
    const tex = parts.join('\n').trim();
    return tex ? { tex, end: k + 1 } : null;
  }
  return { pending: true, end: lines.length };
}

// opensDisplayBlock: whether lines[i] starts a display block (closed or
// still streaming), so a paragraph ends before it.
export function opensDisplayBlock(lines, i) {
  return OPEN_BLOCK_RE.test(lines[i]) && displayBlock(lines, i) !== null;
}
