/**
 * Sealed interactions: the pending authorization request travels in the
 * browser, HMAC-sealed, instead of a database row.
 */
import { describe, expect, it } from 'vitest';
import { newInteraction, openInteraction, sealInteraction, sealedInteractionPattern } from '../../src/oauth/interaction.js';
import { authorizationRequest, t0 } from '../helpers/records.js';

const key = 'server-secret-for-tests';
const browser = 'browser-binding-1';

describe('sealInteraction / openInteraction', () => {
  it('round-trips every field, including characters that need escaping', () => {
    const request = authorizationRequest({ state: 'ünïcödé "quoted" \\ \n 😀', nonce: "n'once<>&", prompt: ['login', 'consent'] });
    const interaction = newInteraction(request, { maxAge: 300, expectedSubject: 'user-1', now: t0 });
    const sealed = sealInteraction(key, browser, interaction);
    expect(sealed).toMatch(sealedInteractionPattern);
    expect(openInteraction(key, browser, sealed, t0 + 10)).toStrictEqual(interaction);
  });

  it('keeps absent members absent', () => {
    const interaction = newInteraction(authorizationRequest({ nonce: undefined, codeChallenge: undefined, prompt: [] }), {
      maxAge: undefined,
      expectedSubject: undefined,
      now: t0,
    });
    expect(openInteraction(key, browser, sealInteraction(key, browser, interaction), t0)).toStrictEqual(interaction);
  });

  it('expires after 10 minutes', () => {
    const sealed = sealInteraction(key, browser, newInteraction(authorizationRequest(), { maxAge: undefined, expectedSubject: undefined, now: t0 }));
    expect(openInteraction(key, browser, sealed, t0 + 599)).toBeDefined();
    expect(openInteraction(key, browser, sealed, t0 + 600)).toBeUndefined();
  });

  it('works only in the browser it was made for, and only under the server key', () => {
    const sealed = sealInteraction(key, browser, newInteraction(authorizationRequest(), { maxAge: undefined, expectedSubject: undefined, now: t0 }));
    expect(openInteraction(key, 'another-browser', sealed, t0)).toBeUndefined();
    expect(openInteraction('another-key', browser, sealed, t0)).toBeUndefined();
  });

  it('an altered seal opens to nothing', () => {
    const sealed = sealInteraction(key, browser, newInteraction(authorizationRequest(), { maxAge: undefined, expectedSubject: undefined, now: t0 }));
    const [body, tag] = sealed.split('.');
    const wire = JSON.parse(Buffer.from(body!, 'base64url').toString('utf8'));
    wire.e = t0 + 10 ** 9; // a request that never expires
    expect(openInteraction(key, browser, `${Buffer.from(JSON.stringify(wire)).toString('base64url')}.${tag}`, t0)).toBeUndefined();
    for (const bad of ['', 'x', 'a.b', `${body}.${tag}x`, `${body}!.${tag}`]) expect(openInteraction(key, browser, bad, t0)).toBeUndefined();
  });
});
