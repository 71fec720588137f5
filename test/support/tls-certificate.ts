import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
export const OPENSSL_BIN = 'openssl';

export interface TestCertificate {
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** The CA's PEM, for a client's `tls.ca`. */
  readonly ca: string;
}

/**
 * A throwaway CA and a server certificate it signed for IP 127.0.0.1 (EC P-256, valid one
 * day), written with openssl into `dir`.
 */
export async function createTestCertificate(dir: string): Promise<TestCertificate> {
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileAsync(OPENSSL_BIN, args);
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await openssl(
    'req',
    '-x509',
    ...ecKey,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
    '-days',
    '1',
    '-subj',
    '/CN=harness test CA',
  );
  await openssl(
    'req',
    ...ecKey,
    '-keyout',
    file('server.key'),
    '-out',
    file('server.csr'),
    '-subj',
    '/CN=127.0.0.1',
  );
  writeFileSync(file('server.ext'), 'subjectAltName=IP:127.0.0.1\n');
  await openssl(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.crt'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    file('server.crt'),
    '-days',
    '1',
    '-extfile',
    file('server.ext'),
  );
  return {
    caFile: file('ca.crt'),
    certFile: file('server.crt'),
    keyFile: file('server.key'),
    ca: readFileSync(file('ca.crt'), 'utf8'),
  };
}
