// Self-signed TLS for the servers the product starts: the metrics endpoint and the runtime extension. (The standalone
// local API server has its own copy in tools/local-apiserver/tls.ts.)
import { generate } from 'selfsigned';

/**
 * A self-signed certificate (its own CA, so a client can trust it through a caBundle) for `commonName`, valid for
 * localhost, 127.0.0.1 and `dnsNames`: the metrics server and the runtime extension serve TLS with it.
 */
export async function selfSignedCertificate(commonName: string, dnsNames: readonly string[] = []): Promise<{ key: string; cert: string }> {
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
          ...dnsNames.map((value) => ({ type: 2 as const, value })),
        ],
      },
    ],
  });
  return { key: pems.private, cert: pems.cert };
}
