/**
 * Opens a URL in the person's default browser ($BROWSER, else the platform's opener). The URL is
 * on the opener's and the browser's command lines, which every local account can read
 * (/proc/PID/cmdline): pass nothing secret — `latchkey login` passes the address of a file only
 * the person can read (sign_in_page.ts).
 */
import { spawn } from 'node:child_process';

export function openBrowser(url: string, browserCommand: string | undefined): void {
  const [command, args] =
    browserCommand !== undefined
      ? [browserCommand, [url]]
      : process.platform === 'darwin'
        ? ['open', [url]]
        : process.platform === 'win32'
          ? ['cmd', ['/c', 'start', '""', url]]
          : ['xdg-open', [url]];
  try {
    const child = spawn(command, args, { detached: true, stdio: 'ignore' });
    // No opener installed is fine: the address is always printed too.
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // Same: the person can copy the printed address.
  }
}
