/** "Did you mean …?": edit distance over the command index. */
import { describe, expect, it } from 'vitest';
import { commandIndex } from '../../src/cli/command_index.js';
import { editDistance, suggestCommands } from '../../src/cli/suggest.js';

describe('editDistance', () => {
  it.each([
    ['login', 'login', 0],
    ['logn', 'login', 1],
    ['user', 'users', 1],
    ['sttaus', 'status', 2],
    ['', 'abc', 3],
    ['kitten', 'sitting', 3],
  ])('%s → %s: %i', (a, b, distance) => {
    expect(editDistance(a, b)).toBe(distance);
    expect(editDistance(b, a)).toBe(distance);
  });
});

describe('suggestCommands', () => {
  it.each([
    [['user', 'list'], ['users list']],
    [['logn'], ['login']],
    [['users', 'lst'], ['users list']],
    [['user'], ['users']],
    [['clients', 'rotate-secrt'], ['clients rotate-secret']],
    [['tokn', 'extra'], ['token']],
    [['frobnicate'], []],
    [['users', 'frobnicate'], []],
    [[], []],
  ])('%j → %j', (words, expected) => {
    expect(suggestCommands(words, commandIndex)).toEqual(expected);
  });

  it('offers at most three, the closest only', () => {
    const suggestions = suggestCommands(
      ['x'],
      [
        { path: ['a'], summary: '', client: true, load: () => Promise.reject(new Error('unused')) },
        { path: ['b'], summary: '', client: true, load: () => Promise.reject(new Error('unused')) },
        { path: ['c'], summary: '', client: true, load: () => Promise.reject(new Error('unused')) },
        { path: ['d'], summary: '', client: true, load: () => Promise.reject(new Error('unused')) },
        { path: ['xy'], summary: '', client: true, load: () => Promise.reject(new Error('unused')) },
      ],
    );
    expect(suggestions).toEqual(['a', 'b', 'c']);
  });
});
