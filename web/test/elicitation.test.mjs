// Unit tests of the MCP question form's schema reading and answer
// collection: `node --test web/test/`.
import test from 'node:test';
import assert from 'node:assert/strict';
import { formFields, collect } from '../static/js/elicitation.js';

const schema = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Name', default: 'Ann' },
    age: { type: 'integer', description: 'Years' },
    score: { type: 'number' },
    tier: { type: 'string', enum: ['free', 'pro'], enumNames: ['Free', 'Pro'] },
    colors: { type: 'array', items: { anyOf: [{ const: 'red' }, { const: 'blue' }] } },
    ok: { type: 'boolean', default: true },
  },
  required: ['age', 'name'],
};

test('every property becomes a field of its kind, in order', () => {
  const f = formFields(schema);
  assert.deepEqual(f.map((x) => [x.name, x.kind, x.required]), [
    ['name', 'string', true], ['age', 'integer', true], ['score', 'number', false],
    ['tier', 'enum', false], ['colors', 'multi', false], ['ok', 'boolean', false],
  ]);
  assert.equal(f[0].title, 'Name');
  assert.equal(f[0].default, 'Ann');
  assert.deepEqual(f[3].labels, ['Free', 'Pro']);
  assert.deepEqual(f[4].options, ['red', 'blue']);
  assert.deepEqual(formFields(null), []);
});

test('empty optional fields are left out for the defaults; numbers are parsed', () => {
  const f = formFields(schema);
  assert.deepEqual(collect(f, { name: '', age: '41', score: '', tier: 'pro', colors: ['blue'], ok: false }),
    { content: { age: 41, tier: 'pro', colors: ['blue'], ok: false } });
});

test('a required field without a default, and a bad number, are refused', () => {
  const f = formFields(schema);
  assert.equal(collect(f, { age: '' }).error, 'age is required.');
  assert.equal(collect(f, { age: '4.5' }).error, 'age must be a whole number.');
  assert.equal(collect(f, { age: '4', score: 'x' }).error, 'score must be a number.');
});
