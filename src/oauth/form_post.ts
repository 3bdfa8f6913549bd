/**
 * OAuth 2.0 Form Post Response Mode (OpenID Foundation, 2015): the authorization response is
 * delivered as an HTML form the browser posts to the redirect URI, so the code never sits in a
 * URL (history, Referer, proxy logs). The page submits itself with one inline script, allowed by
 * its hash alone in the page's Content-Security-Policy, and may post only to the client's origin.
 */
import { createHash } from 'node:crypto';

/** The page's whole script: its hash is the only script the policy allows. */
export const formPostScript = 'document.forms[0].submit();';

const scriptHash = `'sha256-${createHash('sha256').update(formPostScript).digest('base64')}'`;

/** The policy of a form_post page: nothing but that script, and a form towards `formAction`. */
export function formPostPolicy(formAction: string): string {
  return ["default-src 'none'", `script-src ${scriptHash}`, `form-action ${formAction}`, "frame-ancestors 'none'", "base-uri 'none'"].join('; ');
}

/** Whether a redirect URI can receive a form post: browsers post only to http(s). */
export function formPostable(redirectUri: string): boolean {
  return /^https?:\/\//i.test(redirectUri);
}
