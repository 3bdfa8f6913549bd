/**
 * Every relative link in README.md, SECURITY.md and docs/ leads somewhere: the file exists and an
 * `#anchor` names a heading of the page it points at (GitHub's heading ids). The docs are split
 * into a page per topic that link to each other's sections, so a renamed heading or a moved page
 * breaks links silently; this is where that shows.
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { anchorsOf, brokenLinks, githubSlug, linkTargets, markdownFilesUnder } from './markdown_links.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('links in the documentation', () => {
  it('every relative link in README.md, SECURITY.md and docs/ points at a file and heading that exist', () => {
    const pages = [join(root, 'README.md'), join(root, 'SECURITY.md'), ...markdownFilesUnder(join(root, 'docs'))];
    expect(brokenLinks(root, pages)).toEqual([]);
  });

  it('README.md links every page of docs/', () => {
    const linked = new Set(
      linkTargets(readme())
        .map((target) => target.split('#')[0] ?? '')
        .filter((path) => path.startsWith('docs/')),
    );
    const pages = markdownFilesUnder(join(root, 'docs')).map((file) => file.slice(root.length));
    expect(pages.filter((page) => !linked.has(page))).toEqual([]);
  });
});

describe('the link checker', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'latchkey-links-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('makes the ids GitHub makes from headings, duplicates numbered', () => {
    expect(githubSlug('Refresh (grant_type=refresh_token)')).toBe('refresh-grant_typerefresh_token');
    expect(githubSlug('Sign-out for applications (OIDC RP-Initiated and Back-Channel Logout)')).toBe(
      'sign-out-for-applications-oidc-rp-initiated-and-back-channel-logout',
    );
    expect(githubSlug('Device Authorization Grant (RFC 8628 §5)')).toBe('device-authorization-grant-rfc-8628-5');
    const anchors = anchorsOf('# Title\n\n## Client authentication: `private_key_jwt`\n\n## Notes\n\n## Notes\n\n```\n# not a heading\n```\n');
    expect([...anchors]).toEqual(['title', 'client-authentication-private_key_jwt', 'notes', 'notes-1']);
  });

  it('reports a missing file and a missing anchor, and ignores links in code and external ones', () => {
    mkdirSync(join(scratch, 'docs'), { recursive: true });
    writeFileSync(join(scratch, 'docs', 'other.md'), '# Other\n\n## A section\n');
    writeFileSync(
      join(scratch, 'docs', 'page.md'),
      [
        '# Page',
        '',
        '## Here',
        '',
        '[fine](other.md#a-section), [fine too](#here), [external](https://example.com/#nothing),',
        '[a missing page](gone.md), [a missing anchor](other.md#no-such-section), [here, wrong](#there).',
        'In code, `[not a link](nowhere.md)` is text:',
        '',
        '```md',
        '[also not a link](nowhere.md)',
        '```',
        '![an image that is missing](screenshots/none.png)',
      ].join('\n'),
    );
    expect(brokenLinks(scratch, [join(scratch, 'docs', 'page.md')])).toEqual([
      { page: join('docs', 'page.md'), target: 'gone.md', problem: `no file ${join('docs', 'gone.md')}` },
      {
        page: join('docs', 'page.md'),
        target: 'other.md#no-such-section',
        problem: `no heading with the anchor #no-such-section in ${join('docs', 'other.md')}`,
      },
      { page: join('docs', 'page.md'), target: '#there', problem: `no heading with the anchor #there in ${join('docs', 'page.md')}` },
      {
        page: join('docs', 'page.md'),
        target: 'screenshots/none.png',
        problem: `no file ${join('docs', 'screenshots', 'none.png')}`,
      },
    ]);
  });
});

function readme(): string {
  return readFileSync(join(root, 'README.md'), 'utf8');
}
