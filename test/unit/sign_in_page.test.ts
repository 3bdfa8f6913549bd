/**
 * The sign-in page file `latchkey login` hands the browser command: on the real file system, where
 * it lives, who may read it, what it holds, and that nothing is left behind.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeSignInPage } from '../../src/cli/client/sign_in_page.js';

const form = { action: 'http://127.0.0.1:40123/start', secret: 'AbC-_0123456789abcdefghijklmnopqrstuvwxyzAB' };
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-page-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('writeSignInPage', () => {
  it('writes a 0600 file in a fresh 0700 folder of its own, addressed by a file URL that holds no secret', () => {
    const page = writeSignInPage(dir, form);
    const folder = dirname(page.path);
    expect(dirname(folder)).toBe(dir);
    expect(basename(folder)).toMatch(/^login-/);
    expect(basename(page.path)).toBe('sign-in.html');
    expect(statSync(folder).mode & 0o777).toBe(0o700);
    expect(statSync(page.path).mode & 0o777).toBe(0o600);
    expect(fileURLToPath(page.url)).toBe(page.path);
    expect(page.url).not.toContain(form.secret);
    expect(page.url).not.toContain('127.0.0.1');
  });

  it('holds a form that posts the one field t to the action, sent by itself and by a button without script', () => {
    const html = readFileSync(writeSignInPage(dir, form).path, 'utf8');
    expect(html).toContain(`<form method="post" action="${form.action}">`);
    expect(html).toContain(`<input type="hidden" name="t" value="${form.secret}">`);
    expect(html.match(/<input /g)).toHaveLength(1);
    expect(html).toContain('<button type="submit" id="continue">Continue</button>');
    expect(html).toContain('document.forms[0].submit()');
    expect(html).toContain('<meta name="referrer" content="no-referrer">');
  });

  it('escapes what it writes into the page', () => {
    const html = readFileSync(writeSignInPage(dir, { action: 'http://127.0.0.1:1/start"><script>x</script>', secret: `a"b'c<d>&` }).path, 'utf8');
    expect(html).not.toContain('<script>x</script>');
    expect(html).toContain('value="a&#34;b&#39;c&#60;d&#62;&#38;"');
  });

  it('remove() deletes the file and its folder, and may be called again', () => {
    const page = writeSignInPage(dir, form);
    page.remove();
    expect(existsSync(page.path)).toBe(false);
    expect(existsSync(dirname(page.path))).toBe(false);
    expect(() => page.remove()).not.toThrow();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('two sign-ins at once get a folder each', () => {
    const a = writeSignInPage(dir, form);
    const b = writeSignInPage(dir, form);
    expect(dirname(a.path)).not.toBe(dirname(b.path));
    a.remove();
    expect(existsSync(b.path)).toBe(true);
  });

  it('creates a missing LATCHKEY_HOME as 0700, as the credentials folder is', () => {
    const home = join(dir, 'nested', '.latchkey');
    const page = writeSignInPage(home, form);
    expect(statSync(home).mode & 0o777).toBe(0o700);
    expect(existsSync(page.path)).toBe(true);
  });

  it('a home it cannot make a folder in is an error, and leaves nothing behind', () => {
    const home = join(dir, 'not-a-folder');
    writeFileSync(home, '');
    expect(() => writeSignInPage(home, form)).toThrow(/ENOTDIR/);
    expect(readdirSync(dir)).toEqual(['not-a-folder']);
  });
});
