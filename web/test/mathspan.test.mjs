// Unit tests of where math and diagrams are found in markdown
// (mathspan.js, and markdown.js's placeholders): `node --test web/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import { inlineMath, displayBlock } from '../static/js/mathspan.js';
import { renderMarkdown } from '../static/js/markdown.js';

// spans lists the math placeholders of html as [kind, tex] pairs (entities decoded).
function spans(html) {
  const out = [];
  const re = /<(?:span|div) class="math math-(inline|display)">([\s\S]*?)<\/(?:span|div)>/g;
  for (let m; (m = re.exec(html));) {
    out.push([m[1], m[2].replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&')]);
  }
  return out;
}

test('inline and display delimiters', () => {
  assert.deepEqual(spans(renderMarkdown('Euler: $e^{i\\pi}+1=0$, and \\(a<b\\).')),
    [['inline', 'e^{i\\pi}+1=0'], ['inline', 'a<b']]);
  assert.deepEqual(spans(renderMarkdown('So $$\\sum_{n=1}^\\infty \\frac1{n^2}$$ and \\[x^2\\] too')),
    [['display', '\\sum_{n=1}^\\infty \\frac1{n^2}'], ['display', 'x^2']]);
});

test('markdown inside math is left alone', () => {
  const html = renderMarkdown('Here $a_1*b_2* + [x](y)$ ends and *this* is emphasis');
  assert.deepEqual(spans(html), [['inline', 'a_1*b_2* + [x](y)']]);
  assert.match(html, /<em>this<\/em>/);
  assert.doesNotMatch(html, /<a /);
});

test('prices and other dollars stay text', () => {
  for (const text of [
    'It costs $5 and $10 with tax.',
    'From US$5 to US$10.',
    'A lone $ sign, and $ spaced $ dollars.',
    'Trailing space $x $ is no closer.',
    'Escaped \\$x\\$ dollars.',
    'Pay $5, or $ 6.',
  ]) {
    assert.deepEqual(spans(renderMarkdown(text)), [], text);
  }
  assert.match(renderMarkdown('It costs $5 and $10 with tax.'), /It costs \$5 and \$10 with tax\./);
  assert.match(renderMarkdown('Escaped \\$x\\$ dollars.'), /Escaped \$x\$ dollars\./);
  // The first $ after an opener is its closer: a price before real math does not swallow it.
  assert.deepEqual(spans(renderMarkdown('It costs $5, see $x$.')), [['inline', 'x']]);
});

test('a dollar in code is code', () => {
  const html = renderMarkdown('Run `echo $HOME $PATH` then\n\n```sh\nprice=$5; echo "$x$"\n```');
  assert.deepEqual(spans(html), []);
  assert.match(html, /<code>echo \$HOME \$PATH<\/code>/);
  assert.match(html, /price=/);
  // A span would cross a code span: no math.
  assert.deepEqual(spans(renderMarkdown('costs $5 `x$` here')), []);
});

test('display blocks span lines, and list or heading markers inside them are TeX', () => {
  const html = renderMarkdown('Before\n$$\n- a\n# b\n$$\nAfter');
  assert.deepEqual(spans(html), [['display', '- a\n# b']]);
  assert.match(html, /<p>Before<\/p>/);
  assert.match(html, /<p>After<\/p>/);
  assert.doesNotMatch(html, /<ul>|<h1>/);
  assert.deepEqual(spans(renderMarkdown('\\[\nx = \\frac{-b}{2a}\n\\]')), [['display', 'x = \\frac{-b}{2a}']]);
  // Inside a list item and a quote too.
  assert.deepEqual(spans(renderMarkdown('- item\n\n  $$\n  y\n  $$')), [['display', 'y']]);
  assert.deepEqual(spans(renderMarkdown('> $$z$$')), [['display', 'z']]);
});

test('an unclosed span or block (a reply still streaming) shows its source as text', () => {
  assert.deepEqual(spans(renderMarkdown('So $e^{i\\pi')), []);
  assert.match(renderMarkdown('So $e^{i\\pi'), /So \$e\^\{i\\pi/);
  const html = renderMarkdown('Here:\n\n$$\n\\int_0^1');
  assert.deepEqual(spans(html), []);
  assert.match(html, /<p class="math-pending">\$\$<br>\\int_0\^1<\/p>/);
  assert.deepEqual(displayBlock(['$$', 'x'], 0), { pending: true, end: 2 });
  assert.deepEqual(displayBlock(['$$', 'x', '$$', 'y'], 0), { tex: 'x', end: 3 });
  assert.equal(displayBlock(['$$x$$ and more'], 0), null, 'text after the closer: an inline span');
});

test('inlineMath reads one span', () => {
  assert.deepEqual(inlineMath('$x$', 0), { tex: 'x', display: false, end: 3 });
  assert.deepEqual(inlineMath('a $x\\$y$ b', 2), { tex: 'x\\$y', display: false, end: 8 });
  assert.equal(inlineMath('$x$5', 0), null, 'a closer followed by a digit');
  assert.equal(inlineMath('$ x$', 0), null, 'an opener followed by a space');
  assert.equal(inlineMath('$x\n\ny$', 0), null, 'no blank line inside');
  assert.equal(inlineMath('$$ $$', 0), null, 'blank content');
  assert.equal(inlineMath('\\(x', 0), null, 'unclosed');
});

test('a closed mermaid fence is a diagram placeholder around its code; an unclosed one is code', () => {
  const src = 'graph TD\n  A-->B';
  const done = renderMarkdown('```mermaid\n' + src + '\n```');
  assert.match(done, /^<div class="mermaid-block"><div class="codeblock">/);
  assert.match(done, /A--&gt;B/);
  const streaming = renderMarkdown('```mermaid\n' + src);
  assert.doesNotMatch(streaming, /mermaid-block/);
  assert.match(streaming, /<div class="codeblock">/);
  assert.doesNotMatch(renderMarkdown('```mermaid\n```'), /mermaid-block/, 'an empty diagram is code');
});

test('math placeholders hold escaped source only', () => {
  const html = renderMarkdown('$<img src=x onerror=alert(1)>$ and $$</div><script>$$');
  assert.doesNotMatch(html, /<img|<script|<\/div><script/);
  assert.equal(spans(html).length, 2);
});
