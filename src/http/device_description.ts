/**
 * A few words for a person about the browser a request came from ("Firefox on Linux"), read from
 * its User-Agent. Only words from the lists below ever come out: a User-Agent is whatever the
 * sender typed, and text chosen by someone who took an account has no place in the security
 * notice that warns its owner (it could read "this was your administrator, nothing to do").
 */

/** Checked in order: Edge and Opera also say Chrome, Chrome also says Safari. */
const browsers: ReadonlyArray<readonly [RegExp, string]> = [
  [/\bEdg(?:e|A|iOS)?\//, 'Edge'],
  [/\b(?:OPR|Opera)\//, 'Opera'],
  [/\bSamsungBrowser\//, 'Samsung Internet'],
  [/\b(?:Firefox|FxiOS)\//, 'Firefox'],
  [/\b(?:Chrome|Chromium|CriOS)\//, 'Chrome'],
  [/\bVersion\/[\d.]+.*\bSafari\//, 'Safari'],
  [/^latchkey\//, 'the latchkey command'],
  [/^curl\//, 'curl'],
];

const systems: ReadonlyArray<readonly [RegExp, string]> = [
  [/\biPhone\b/, 'an iPhone'],
  [/\biPad\b/, 'an iPad'],
  [/\bAndroid\b/, 'Android'],
  [/\bCrOS\b/, 'ChromeOS'],
  [/\bWindows\b/, 'Windows'],
  [/\bMac OS X\b|\bMacintosh\b/, 'macOS'],
  [/\bLinux\b/, 'Linux'],
];

function firstMatch(text: string, list: ReadonlyArray<readonly [RegExp, string]>): string | undefined {
  return list.find(([pattern]) => pattern.test(text))?.[1];
}

/** "Firefox on Linux", "Safari on an iPhone", "a browser on Windows", "Chrome"; undefined when nothing is recognised. */
export function deviceDescription(userAgent: string | undefined): string | undefined {
  if (userAgent === undefined) return undefined;
  const text = userAgent.slice(0, 512);
  const browser = firstMatch(text, browsers);
  const system = firstMatch(text, systems);
  if (browser && system) return `${browser} on ${system}`;
  if (system) return `a browser on ${system}`;
  return browser;
}
