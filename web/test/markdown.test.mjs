// Unit tests of the UI's pure markdown renderer: `node --test web/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import { renderMarkdown, safeHref } from '../static/js/markdown.js';

// codeText is what "Copy code" copies: the <code> element's text content,
// tags dropped and entities decoded.
function codeText(html) {
  const m = /<pre[^>]*><code>([\s\S]*?)<\/code><\/pre>/.exec(html);
  assert.ok(m, `a code block in ${html}`);
  return m[1].replace(/<[^>]+>/g, '')
    .replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
}

test('a fenced code block keeps its tabs', () => {
  const makefile = 'all:\n\tgo build ./...\n\tgo test ./...';
  assert.equal(codeText(renderMarkdown('```make\n' + makefile + '\n```')), makefile);
  const goSrc = 'func main() {\n\tif x {\n\t\treturn\n\t}\n}';
  assert.equal(codeText(renderMarkdown('Here:\n\n```go\n' + goSrc + '\n```\n\nDone.')), goSrc);
});

test('a code block inside a list item keeps the tabs after its indentation', () => {
  const html = renderMarkdown('1. Run:\n\n   ```sh\n   \tmake all\n   ```\n2. Next');
  assert.equal(codeText(html), '\tmake all');
  assert.match(html, /<ol[^>]*>[\s\S]*<li>[\s\S]*Next/);
});

test('an unclosed fence (a reply still streaming) keeps its tabs to the end', () => {
  assert.equal(codeText(renderMarkdown('```go\nfunc f() {\n\treturn')), 'func f() {\n\treturn');
});

test('a tab still indents markdown structure outside code', () => {
  const html = renderMarkdown('- one\n\t- nested');
  assert.match(html, /<ul>[\s\S]*<ul>[\s\S]*nested/);
  assert.doesNotMatch(html, /\t/);
});

test('text after a closed fence is markdown again', () => {
  const html = renderMarkdown('```\n\tcode\n```\n\t- item');
  assert.equal(codeText(html), '\tcode');
  assert.match(html, /<li>item<\/li>/);
});

test('links keep only safe schemes', () => {
  assert.equal(safeHref('https://example.com/a'), 'https://example.com/a');
  assert.equal(safeHref('java\tscript:alert(1)'), null);
  assert.doesNotMatch(renderMarkdown('[x](javascript:alert(1))'), /href/);
});

// tags lists the elements of html the renderer wrote: every '<' in its
// output opens a tag (text is escaped), with name="value" attributes.
function tags(html) {
  const out = [];
  for (const m of html.matchAll(/<([a-zA-Z][\w-]*)((?:\s+[\w-]+(?:="[^"<>]*")?)*)\s*\/?>/g)) {
    const attrs = {};
    for (const a of m[2].matchAll(/([\w-]+)(?:="([^"]*)")?/g)) attrs[a[1].toLowerCase()] = a[2] ?? '';
    out.push({ name: m[1].toLowerCase(), attrs, at: m.index });
  }
  // Every '<' that starts no tag or closing tag would be raw markup.
  const opens = (html.match(/<(?!\/?[a-zA-Z])/g) || []).length;
  assert.equal(opens, 0, `stray '<' in ${html}`);
  return out;
}

// The copy button's icon is the renderer's own SVG.
const withoutCopyButtons = (html) => html.replace(/<button type="button" class="codeblock-copy"[\s\S]*?<\/button>/g, '');

test('hostile markdown never yields markup that runs or loads anything', () => {
  const inputs = ['<img src=x onerror=alert(1)>', '<script>alert(1)</script>', '[a](javascript:alert(1))',
    '[a](JaVaScRiPt:alert(1))', '[a](java\tscript:alert(1))', '[a](data:text/html,<script>alert(1)</script>)',
    '![x](javascript:alert(1))', '<javascript:alert(1)>', '```html\n<script>alert(1)</script>\n```',
    '| <b onmouseover=alert(1)> | x |\n|---|---|\n| <svg onload=alert(1)> | y |', '[x](https://ok.example/" onmouseover="alert(1))',
    '**<iframe src=javascript:alert(1)>**', '&lt;script&gt;', '<a href="javascript:alert(1)">x</a>',
    '<img src=x onerror="window.__xss=1"> <script>window.__xss=2</script> [click me](javascript:window.__xss=3) **bold**'];
  for (const s of inputs) {
    const html = renderMarkdown(s);
    for (const t of tags(withoutCopyButtons(html))) {
      assert.doesNotMatch(t.name, /^(script|img|iframe|svg|b|object|embed|style|link|meta|form|input)$/, `<${t.name}> from ${s}`);
      for (const name of Object.keys(t.attrs)) assert.doesNotMatch(name, /^on/, `${name} on <${t.name}> from ${s}`);
      if (t.name === 'a') assert.match(t.attrs.href, /^(https?:|mailto:)/i, `href of ${s}`);
    }
  }
  // What was typed shows as text.
  assert.match(renderMarkdown('<script>x</script>'), /&lt;script&gt;x&lt;\/script&gt;/);
});

test('fence labels naming Object.prototype members and deep nesting still render what follows', () => {
  const labels = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'prototype', 'valueOf',
    '__defineGetter__', '__lookupSetter__', 'isPrototypeOf', 'propertyIsEnumerable', 'toLocaleString',
    'CONSTRUCTOR', '__PROTO__', 'js', 'go'];
  const inputs = [];
  for (const l of labels) {
    inputs.push('```' + l + '\nlet x = 1;\n```\n\nafter ' + l);
    inputs.push('~~~' + l + ' more words\nlet x = 1;\n~~~\n\nafter ' + l);
    inputs.push('> - ```' + l + '\n>   code\n>   ```\n\nafter ' + l);
  }
  const deep = 20000;
  inputs.push('>'.repeat(deep) + ' deep quote\n\nafter quotes');
  inputs.push(Array.from({ length: 300 }, (_, k) => '  '.repeat(k) + '- item ' + k).join('\n') + '\n\nafter lists');
  inputs.push(Array.from({ length: 2000 }, (_, k) => '>'.repeat(k + 1) + ' line ' + k).join('\n') + '\n\nafter quote lines');
  inputs.push('['.repeat(deep) + 'x' + ']'.repeat(deep) + '(https://ok.example)\n\nafter links');
  inputs.push('*_'.repeat(1500) + 'x' + '_*'.repeat(1500) + '\n\nafter emphasis');
  inputs.push('~~**'.repeat(1000) + 'x' + '**~~'.repeat(1000) + '\n\nafter strikes');
  inputs.push(Array.from({ length: 200 }, (_, k) => '  '.repeat(k) + '> - [x](https://ok.example/' + k + ')').join('\n') + '\n\nafter mixed');
  inputs.forEach((s, i) => {
    const want = 'after-' + i;
    const html = renderMarkdown(s + '\n\n' + want);
    assert.ok(html.endsWith(`<p>${want}</p>`), `${s.slice(0, 40)}: nothing after it`);
  });
  // The label is shown as the block's language, escaped, not looked up.
  assert.match(renderMarkdown('```constructor\nx = 1\n```'), /<span class="codeblock-lang">constructor<\/span>/);
  assert.match(renderMarkdown('```__proto__\ny\n```'), /<span class="codeblock-lang">__proto__<\/span>/);
});
