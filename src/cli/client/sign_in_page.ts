/**
 * The page `latchkey login` opens in the browser: a file only this account can read (0600, in a
 * fresh 0700 folder under LATCHKEY_HOME) whose form posts the one-time start secret to the
 * loopback listener, which answers with the authorization request. The browser command's line is
 * readable by every local account (/proc/PID/cmdline), so it carries only the file's address: had
 * it carried the secret or the request, whoever opened it first could sign in as themselves and
 * have their code delivered with our `state` (RFC 6749 §10.12, RFC 8252 §8.3).
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { StartForm } from './loopback.js';

export interface SignInPage {
  /** `file:///…/login-XXXXXX/sign-in.html`: what the browser command is given. */
  url: string;
  path: string;
  /** Deletes the file and its folder; safe to call more than once, never throws. */
  remove(): void;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The form sends itself at once; with no script (a text browser) the button does. Shown again by
 * Back, the page does not send the secret a second time, which would cancel the sign-in.
 */
function html(form: StartForm): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Latchkey sign-in</title>
<style>body{font-family:system-ui,sans-serif;display:flex;min-height:90vh;align-items:center;justify-content:center;color:#1b1d21;background:#f4f5f7}main{background:#fff;border:1px solid #d6d9df;border-radius:12px;padding:2rem;max-width:26rem}h1{font-size:1.4rem;margin:0 0 .5rem}</style>
</head>
<body>
<main>
<h1>Latchkey sign-in</h1>
<form method="post" action="${escapeHtml(form.action)}">
<input type="hidden" name="t" value="${escapeHtml(form.secret)}">
<p id="status">Taking you to the sign-in page…</p>
<button type="submit" id="continue">Continue</button>
</form>
</main>
<script>
function shownAgain() {
  document.getElementById('status').textContent = 'This sign-in has started already: go forward to carry on, or run latchkey login again in your terminal.';
  var button = document.getElementById('continue');
  if (button) button.remove();
}
var navigation = performance.getEntriesByType ? performance.getEntriesByType('navigation')[0] : undefined;
if (navigation && navigation.type === 'back_forward') shownAgain();
else document.forms[0].submit();
addEventListener('pageshow', function (event) { if (event.persisted) shownAgain(); });
</script>
</body>
</html>
`;
}

/** Writes the page under `home` (created 0700 when missing, as the credentials folder is). */
export function writeSignInPage(home: string, form: StartForm): SignInPage {
  if (!existsSync(home)) mkdirSync(home, { recursive: true, mode: 0o700 });
  // mkdtemp makes a new folder or fails, so nothing another account prepared is reused; 0700 even
  // when LATCHKEY_HOME itself is a folder others may list.
  const folder = mkdtempSync(join(home, 'login-'));
  const remove = () => {
    try {
      rmSync(folder, { recursive: true, force: true });
    } catch {
      // Called on the way out of every sign-in: it must not hide how the sign-in ended. What stays
      // is 0600, and its secret is useless once the listener has closed.
    }
  };
  try {
    chmodSync(folder, 0o700);
    const path = join(folder, 'sign-in.html');
    writeFileSync(path, html(form), { mode: 0o600, flag: 'wx' });
    return { url: pathToFileURL(path).href, path, remove };
  } catch (err) {
    remove();
    throw err;
  }
}
