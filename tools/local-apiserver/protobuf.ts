/**
 * Decoding of Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) for the built-in kinds
 * kubectl's generators send that way (`kubectl create namespace|configmap|secret|serviceaccount`, leases).
 * Responses are always JSON, which clients accept.
 */
import { unsupportedMediaType, badRequest } from './errors.js';

type Obj = Record<string, unknown>;
type Kind = 'string' | 'bytes' | 'int' | 'bool' | 'time' | { msg: Spec } | { map: 'string' | 'bytes' };
interface Field {
  name: string;
  kind: Kind;
  repeated?: boolean;
}
type Spec = Record<number, Field>;

const TIME: Spec = { 1: { name: 'seconds', kind: 'int' }, 2: { name: 'nanos', kind: 'int' } };
const OWNER_REF: Spec = {
  1: { name: 'kind', kind: 'string' },
  3: { name: 'name', kind: 'string' },
  4: { name: 'uid', kind: 'string' },
  5: { name: 'apiVersion', kind: 'string' },
  6: { name: 'controller', kind: 'bool' },
  7: { name: 'blockOwnerDeletion', kind: 'bool' },
};
const OBJECT_META: Spec = {
  1: { name: 'name', kind: 'string' },
  2: { name: 'generateName', kind: 'string' },
  3: { name: 'namespace', kind: 'string' },
  5: { name: 'uid', kind: 'string' },
  6: { name: 'resourceVersion', kind: 'string' },
  7: { name: 'generation', kind: 'int' },
  8: { name: 'creationTimestamp', kind: 'time' },
  11: { name: 'labels', kind: { map: 'string' } },
  12: { name: 'annotations', kind: { map: 'string' } },
  13: { name: 'ownerReferences', kind: { msg: OWNER_REF }, repeated: true },
  14: { name: 'finalizers', kind: 'string', repeated: true },
};
const OBJECT_REF: Spec = {
  1: { name: 'kind', kind: 'string' },
  2: { name: 'namespace', kind: 'string' },
  3: { name: 'name', kind: 'string' },
  4: { name: 'uid', kind: 'string' },
  5: { name: 'apiVersion', kind: 'string' },
  6: { name: 'resourceVersion', kind: 'string' },
  7: { name: 'fieldPath', kind: 'string' },
};
const META = { name: 'metadata', kind: { msg: OBJECT_META } } as const;

const KINDS: Record<string, Spec> = {
  'v1/Namespace': { 1: META, 2: { name: 'spec', kind: { msg: { 1: { name: 'finalizers', kind: 'string', repeated: true } } } } },
  'v1/ConfigMap': {
    1: META,
    2: { name: 'data', kind: { map: 'string' } },
    3: { name: 'binaryData', kind: { map: 'bytes' } },
    4: { name: 'immutable', kind: 'bool' },
  },
  'v1/Secret': {
    1: META,
    2: { name: 'data', kind: { map: 'bytes' } },
    3: { name: 'type', kind: 'string' },
    4: { name: 'stringData', kind: { map: 'string' } },
    5: { name: 'immutable', kind: 'bool' },
  },
  'v1/ServiceAccount': {
    1: META,
    2: { name: 'secrets', kind: { msg: OBJECT_REF }, repeated: true },
    3: { name: 'imagePullSecrets', kind: { msg: { 1: { name: 'name', kind: 'string' } } }, repeated: true },
    4: { name: 'automountServiceAccountToken', kind: 'bool' },
  },
  'coordination.k8s.io/v1/Lease': {
    1: META,
    2: {
      name: 'spec',
      kind: {
        msg: {
          1: { name: 'holderIdentity', kind: 'string' },
          2: { name: 'leaseDurationSeconds', kind: 'int' },
          3: { name: 'acquireTime', kind: 'time' },
          4: { name: 'renewTime', kind: 'time' },
          5: { name: 'leaseTransitions', kind: 'int' },
          6: { name: 'strategy', kind: 'string' },
          7: { name: 'preferredHolder', kind: 'string' },
        },
      },
    },
  },
};

class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}
  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    while (true) {
      if (this.pos >= this.buf.length) throw badRequest('protobuf: unexpected end of input');
      const b = this.buf[this.pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
      if (shift > 70n) throw badRequest('protobuf: varint overflow');
    }
  }
  bytes(): Buffer {
    const len = Number(this.varint());
    if (this.pos + len > this.buf.length) throw badRequest('protobuf: length out of range');
    const b = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return b;
  }
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw badRequest(`protobuf: unsupported wire type ${wire}`);
  }
}

function decodeMsg(buf: Buffer, spec: Spec): Obj {
  const r = new Reader(buf);
  const out: Obj = {};
  while (r.pos < buf.length) {
    const tag = Number(r.varint());
    const no = tag >>> 3;
    const wire = tag & 7;
    const f = spec[no];
    if (!f) {
      r.skip(wire);
      continue;
    }
    let v: unknown;
    const k = f.kind;
    if (k === 'int' || k === 'bool') {
      const n = wire === 0 ? r.varint() : (r.skip(wire), 0n);
      v = k === 'bool' ? n !== 0n : Number(BigInt.asIntN(64, n));
    } else {
      if (wire !== 2) {
        r.skip(wire);
        continue;
      }
      const b = r.bytes();
      if (k === 'string') v = b.toString('utf8');
      else if (k === 'bytes') v = b.toString('base64');
      else if (k === 'time') {
        const t = decodeMsg(b, TIME);
        v = new Date(Number(t.seconds ?? 0) * 1000 + Math.floor(Number(t.nanos ?? 0) / 1e6)).toISOString().replace(/\.000Z$/, 'Z');
      } else if ('msg' in k) v = decodeMsg(b, k.msg);
      else {
        const entry = decodeMsg(b, { 1: { name: 'key', kind: 'string' }, 2: { name: 'value', kind: k.map } });
        const m = (out[f.name] as Obj | undefined) ?? {};
        m[String(entry.key ?? '')] = entry.value ?? '';
        out[f.name] = m;
        continue;
      }
    }
    if (f.repeated) out[f.name] = [...((out[f.name] as unknown[] | undefined) ?? []), v];
    else out[f.name] = v;
  }
  return out;
}

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** Decodes a `k8s\0`-prefixed runtime.Unknown envelope into a JSON object; 415 for kinds not supported here. */
export function decodeProtobufObject(buf: Buffer): Obj {
  if (buf.length < 4 || !buf.subarray(0, 4).equals(MAGIC))
    throw badRequest('provided object is not a Kubernetes protobuf message (missing k8s\\0 prefix)');
  const env = decodeMsg(buf.subarray(4), {
    1: { name: 'typeMeta', kind: { msg: { 1: { name: 'apiVersion', kind: 'string' }, 2: { name: 'kind', kind: 'string' } } } },
    2: { name: 'raw', kind: 'bytes' },
    3: { name: 'contentEncoding', kind: 'string' },
  });
  const tm = (env.typeMeta ?? {}) as Obj;
  const key = `${String(tm.apiVersion ?? '')}/${String(tm.kind ?? '')}`;
  const spec = KINDS[key];
  if (!spec) throw unsupportedMediaType(['application/json', 'application/yaml']);
  if (env.contentEncoding) throw badRequest(`protobuf: unsupported content encoding ${String(env.contentEncoding)}`);
  const raw = Buffer.from(String(env.raw ?? ''), 'base64');
  return { apiVersion: tm.apiVersion, kind: tm.kind, ...decodeMsg(raw, spec) };
}
