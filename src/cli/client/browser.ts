/**
 * Opens a URL in the person's default browser ($BROWSER, else the platform's opener). The URL is
 * on the opener's command line, which every local account can read: pass nothing secret.
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
