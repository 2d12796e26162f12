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
