import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_SUBJECT, messageProblems } from './commit-message.mjs';

const body = '\n\nWhy: the queue needs it. Measured: 3 ms.\n';

test('a subject with an area, a blank line and a body passes', () => {
  for (const subject of [
    'control-plane: move metrics out of http/',
    'docs: link the console from the README',
    'libs/destinations, docs: one folder per vendor',
    'tools/commits: check commit messages',
    'ci_1.2: a digit, a dot and an underscore',
    'merge: console types and commit messages',
  ])
    assert.deepEqual(messageProblems(subject + body), [], subject);
});

test('a subject of exactly 72 characters passes, 73 does not', () => {
  const at = `docs: ${'x'.repeat(MAX_SUBJECT - 6)}`;
  assert.equal(at.length, 72);
  assert.deepEqual(messageProblems(at + body), []);
  assert.deepEqual(messageProblems(`${at}y${body}`), ['the subject has 73 characters, more than 72']);
});

test('length counts characters, not UTF-16 units or bytes', () => {
  const subject = `docs: ${'é'.repeat(60)}${'😀'.repeat(6)}`;
  assert.equal([...subject].length, 72);
  assert.deepEqual(messageProblems(subject + body), []);
});

test('a subject without a lowercase area is refused', () => {
  for (const subject of [
    'Move metrics out of http/',
    'Control-plane: move metrics',
    "Merge branch 'console-commits'",
    'control-plane:move metrics',
    'control-plane:  ',
    ': no area',
    '-docs: starts with a dash',
    'fix(api): conventional commits scope',
  ])
    assert.deepEqual(
      messageProblems(subject + body),
      ['the subject is not `<area>: <what changed>` with a lowercase area'],
      subject,
    );
});

test('a message without a body is refused', () => {
  for (const message of [
    'docs: fix a link',
    'docs: fix a link\n',
    'docs: fix a link\n\n',
    'docs: fix a link\n\n  \n',
  ])
    assert.equal(messageProblems(message).length, 1, JSON.stringify(message));
  assert.deepEqual(messageProblems('docs: fix a link\n'), [
    'there is no body: a blank line after the subject, then why and what was measured',
  ]);
  assert.deepEqual(messageProblems('docs: fix a link\n\n  \n\t\n'), [
    'there is no body: a blank line after the subject, then why and what was measured',
  ]);
});

test('a subject wrapped onto a second line is refused', () => {
  assert.deepEqual(messageProblems('docs: fix a link\nthat moved\n\nbody\n'), [
    'the second line is not blank: a subject is one line, the body follows a blank line',
  ]);
});

test('every problem of a message is named', () => {
  const long = `Docs ${'x'.repeat(80)}`;
  assert.deepEqual(messageProblems(long), [
    'the subject is not `<area>: <what changed>` with a lowercase area',
    'the subject has 85 characters, more than 72',
    'there is no body: a blank line after the subject, then why and what was measured',
  ]);
});
