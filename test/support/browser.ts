import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';

/** The script .ci/run installs the system packages with; the browser test runs it too. */
const INSTALL_SCRIPT = 'scripts/install-test-deps.sh';
/** apt-get fetching chromium on a slow mirror; the test's own steps take seconds. */
export const CHROMIUM_SETUP_TIMEOUT_MS = 15 * 60_000;

function onPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this PATH entry
    }
  }
  return undefined;
}

/**
 * Debian's `chromium` from PATH: browser tests drive the system browser and never download one.
 * When it is missing, a root shell with apt-get installs it with the script .ci/run uses;
 * anyone else is told exactly what to run.
 */
export function findChromium(): string {
  const found = onPath('chromium');
  if (found) return found;
  if (process.getuid?.() !== 0 || !onPath('apt-get')) {
    throw new Error(
      "The sandbox's browser test needs Debian's chromium, and there is none on PATH. " +
        `Install it with: sudo ${INSTALL_SCRIPT} (it runs apt-get install chromium), then rerun npm test.`,
    );
  }
  const script = fileURLToPath(new URL(`../../${INSTALL_SCRIPT}`, import.meta.url));
  const install = spawnSync(script, { stdio: 'inherit', timeout: CHROMIUM_SETUP_TIMEOUT_MS });
  const installed = onPath('chromium');
  if (!installed) {
    throw new Error(
      `${INSTALL_SCRIPT} did not install chromium (exit ${install.status ?? install.error}); its output is above.`,
    );
  }
  return installed;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: findChromium(),
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
}
