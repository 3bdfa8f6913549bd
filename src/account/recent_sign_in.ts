/**
 * How fresh a sign-in must be for a change that could take an account over (its email, its second
 * factors): a session cookie taken from an unlocked laptop must not be enough on its own.
 */

/** A change needs a sign-in made here at most this long ago. */
export const recentSignInSeconds = 15 * 60;
