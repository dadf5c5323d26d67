// The serving certificate of the local API server. Its own copy, not src/runtime/tls.ts: the embedded API server
// stands alone and imports nothing from src/ (docs/adr/0004-layering.md); the certificate is a few lines of selfsigned.
import { generate } from 'selfsigned';

/** A self-signed certificate (its own CA, so a kubeconfig can trust it) for `commonName`, valid for localhost and 127.0.0.1. */
export async function servingCertificate(commonName: string): Promise<{ key: string; cert: string }> {
  const pems = await generate([{ name: 'commonName', value: commonName }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 365 * 24 * 3600 * 1000),
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, keyCertSign: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
        ],
      },
    ],
  });
  return { key: pems.private, cert: pems.cert };
}
