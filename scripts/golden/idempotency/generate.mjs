// Generates the golden files under idempotency/testdata/ from the reference
// TypeScript implementation, @aws-lambda-powertools/idempotency@2.35.0.
// Run: cd scripts/golden/idempotency && npm ci && node generate.mjs
// The Go tests only read the committed output; they never run Node.
import { writeFileSync, mkdirSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { DynamoDBClient, ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { CachePersistenceLayer } from '@aws-lambda-powertools/idempotency/cache';

const here0 = path.dirname(fileURLToPath(import.meta.url));
const version = JSON.parse(readFileSync(path.join(here0, 'node_modules/@aws-lambda-powertools/idempotency/package.json'), 'utf8')).version;
if (version !== '2.35.0') throw new Error(`expected 2.35.0, got ${version}`);

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.resolve(here, '../../../idempotency/testdata');
mkdirSync(outDir, { recursive: true });

// A fixed clock: every timestamp in the records derives from it.
const NOW = 1767225600123; // 2026-01-01T00:00:00.123Z
Date.now = () => NOW;
const REMAINING_MS = 30000;
const lambdaContext = {
  functionName: 'golden-fn',
  awsRequestId: 'req-1',
  getRemainingTimeInMillis: () => REMAINING_MS,
};
console.warn = () => {};

const b64 = (s) => Buffer.from(s, 'utf8').toString('base64');
const gz = (s) => gzipSync(Buffer.from(s, 'utf8')).toString('base64');

// Inputs are JSON text, parsed by JSON.parse exactly as a Lambda runtime would.
const keyCases = [
  { name: 'string', json: '"hello"' },
  { name: 'unicode', json: '{"name":"Grüße, 世界 😀","emoji":"\\ud83d\\ude00"}' },
  { name: 'escapes', json: '{"s":"quote\\" backslash\\\\ slash\\/ \\b\\f\\n\\r\\t \\u0001 \\u001f \\u007f <>& \\u2028\\u2029"}' },
  { name: 'lone_surrogates', json: '{"hi":"\\ud800","lo":"x\\udfffy","pair":"\\ud83d\\ude00","rev":"\\ude00\\ud83d"}' },
  { name: 'case_ties', json: '{"b":1,"B":2,"a":{"Z":1,"z":2,"y":3},"A":0,"_":1,"é":1,"E":2,"e":3}' },
  { name: 'case_ties_reversed', json: '{"B":2,"b":1,"A":0,"a":{"z":2,"Z":1,"y":3}}' },
  { name: 'integer_keys', json: '{"b":1,"10":2,"2":3,"a":4,"01":5,"-1":6,"4294967294":7,"4294967295":8,"1.5":9}' },
  { name: 'unicode_case_keys', json: '{"Σ":1,"ΑΣ":2,"ας":3,"İ":4,"i":5,"ǅ":6,"\\ud83d\\ude00":7,"\\uffff":8,"ß":9,"SS":10}' },
  { name: 'numbers', json: '[-0,0,1,-1,1e21,1e20,123456789012345680000,1e-7,1e-6,0.000001,1.5e300,5e-324,1.7976931348623157e308,0.1,100,1E2,2.50]' },
  { name: 'float_sum', json: '{"x":0.30000000000000004,"y":0.1}' },
  { name: 'large_integers', json: '{"big":12345678901234567890,"safe":9007199254740993,"neg":-9223372036854775808}' },
  { name: 'overflow', json: '{"inf":1e400,"tiny":1e-400}' },
  { name: 'arrays', json: '[[3,2,1],{"b":[{"d":1,"c":2}],"a":[]},null,true,false]' },
  { name: 'empty_values', json: '{"s":"","a":[],"o":{},"n":null,"f":false,"z":0}' },
  { name: 'empty_object', json: '{}' },
  { name: 'empty_array', json: '[]' },
  { name: 'null', json: 'null' },
  { name: 'proto', json: '{"__proto__":{"x":1},"a":1}' },
  { name: 'proto_primitive', json: '{"b":{"__proto__":5,"c":1},"__proto__":null}' },
  { name: 'duplicate_keys', json: '{"a":1,"b":2,"a":3}' },
  { name: 'whitespace', json: ' { "b" : [ 1 , 2 ] ,\n\t"a" : "x" } ' },
  { name: 'order_example', json: '{"id":"ORD-123","amount":42}' },
  { name: 'jmespath_field', json: '{"id":"ORD-123","amount":42}', eventKeyJmesPath: 'id' },
  { name: 'jmespath_multiselect', json: '{"user":{"id":7,"Name":"x"},"order":"o-1","z":1}', eventKeyJmesPath: '{z: z, order: order, user: user.id}' },
  { name: 'jmespath_multiselect_list', json: '{"a":1,"b":[1,2,{"c":3}]}', eventKeyJmesPath: '[b[2].c, a, b[-1]]' },
  { name: 'jmespath_powertools_json', json: JSON.stringify({ body: JSON.stringify({ Id: 'x', id: 1, nested: { B: 1, a: 2 } }) }), eventKeyJmesPath: 'powertools_json(body)' },
  { name: 'jmespath_powertools_json_field', json: JSON.stringify({ body: JSON.stringify({ user: 'u1', items: [3, 1] }) }), eventKeyJmesPath: 'powertools_json(body).[user, items]' },
  { name: 'jmespath_powertools_base64', json: JSON.stringify({ data: b64('{"b":1,"a":"é"}') }), eventKeyJmesPath: 'powertools_json(powertools_base64(data))' },
  { name: 'jmespath_powertools_base64_text', json: JSON.stringify({ data: b64('plain text ☃') }), eventKeyJmesPath: 'powertools_base64(data)' },
  { name: 'jmespath_powertools_base64_gzip', json: JSON.stringify({ data: gz('{"z":[1,2],"A":{"c":null}}') }), eventKeyJmesPath: 'powertools_json(powertools_base64_gzip(data))' },
  { name: 'jmespath_sqs_records', json: JSON.stringify({ Records: [{ messageId: 'm1', body: '{"k":1}' }, { messageId: 'm2', body: '{"k":2}' }] }), eventKeyJmesPath: 'Records[*].powertools_json(body).k' },
  { name: 'jmespath_filter', json: '{"items":[{"n":1,"t":"a"},{"n":2,"t":"b"},{"n":3,"t":"a"}]}', eventKeyJmesPath: "items[?t=='a'].n" },
  { name: 'jmespath_functions', json: '{"people":[{"age":30,"name":"b"},{"age":20,"name":"a"}],"tags":{"y":1,"x":2}}', eventKeyJmesPath: '{sorted: sort_by(people, &age)[*].name, k: keys(tags), v: values(tags), l: length(people), s: to_string(tags), j: join(\'-\', [\'a\', \'b\'])}' },
  { name: 'jmespath_literal', json: '{}', eventKeyJmesPath: '`{"b":1,"A":[1.0,2e3]}`' },
  { name: 'jmespath_or_and_not', json: '{"a":null,"b":"x","c":0}', eventKeyJmesPath: '[a || b, b && c, !c, !a]' },
  { name: 'jmespath_slice_flatten', json: '{"a":[[1,2],[3,[4]],5,6,7]}', eventKeyJmesPath: '[a[::2], a[], a[-2:]]' },
  { name: 'jmespath_pipe_wildcard', json: '{"m":{"x":{"v":1},"y":{"v":2}}}', eventKeyJmesPath: 'm.*.v | [0]' },
  { name: 'jmespath_merge', json: '{"a":{"x":1,"__proto__":{"p":1}},"b":{"y":2}}', eventKeyJmesPath: 'merge(a, b)' },
  { name: 'jmespath_quoted', json: '{"with space":{"é":1},"a-b":2}', eventKeyJmesPath: '["with space"."é", "a-b"]' },
  { name: 'jmespath_numbers', json: '{"xs":[3,1.5,-2]}', eventKeyJmesPath: '[sum(xs), avg(xs), max(xs), min(xs), abs(`-3`), ceil(`1.2`), floor(`1.8`), to_number(\'12.50\'), sort(xs)]' },
  // Field lookups use `name in value`, so Object.prototype members are visible.
  { name: 'jmespath_inherited_proto', json: '{"a":1}', eventKeyJmesPath: '__proto__' },
  { name: 'jmespath_inherited_constructor', json: '{"a":1}', eventKeyJmesPath: 'constructor' },
  { name: 'jmespath_inherited_in_list', json: '{"a":1}', eventKeyJmesPath: '[a, toString, valueOf]' },
  { name: 'jmespath_inherited_in_hash', json: '{"a":1}', eventKeyJmesPath: '{a: a, t: toString, h: hasOwnProperty}' },
  { name: 'jmespath_inherited_projection', json: '{"xs":[{"a":1},{"a":2}]}', eventKeyJmesPath: 'xs[*].toString' },
  { name: 'jmespath_own_constructor', json: '{"constructor":"x"}', eventKeyJmesPath: 'constructor' },
];

// Seeded random payloads widen the net: keys from a pool with case ties, Unicode,
// array indices and escapes; numbers across magnitudes; nesting to depth 4.
function mulberry32(a) {
  return () => {
    a |= 0; a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = mulberry32(20260101);
const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
const keyPool = ['a', 'A', 'b', 'B', 'aa', 'aA', 'Aa', 'ab', '_', '-', '0', '1', '10', '007', 'é', 'É', 'e', 'E', 'ß', 'SS', 'Σ', 'σ', 'ς', 'İ', 'i', 'I', 'ı', 'ǅ', 'Ǆ', 'ǆ', '😀', '\uffff', '\ud800', 'z', 'Z', '__proto__', 'id', 'ID', 'Id', ' ', '', 'k\u0000', 'tab\t'];
const strPool = ['', 'x', 'é', '😀', '\ud83d', '\u2028', '<&>', '"\\', '\u0000\u001f\u007f', 'ÀÉÎ', 'ς'];
function randNumber() {
  switch (Math.floor(rnd() * 6)) {
    case 0: return Math.floor(rnd() * 100);
    case 1: return (rnd() - 0.5) * 10 ** Math.floor(rnd() * 40 - 20);
    case 2: return Math.floor(rnd() * 2 ** 60);
    case 3: return -0;
    case 4: return 10 ** Math.floor(rnd() * 30);
    default: return rnd();
  }
}
function randValue(depth) {
  const r = rnd();
  if (depth >= 4 || r < 0.35) {
    switch (Math.floor(rnd() * 5)) {
      case 0: return null;
      case 1: return rnd() < 0.5;
      case 2: return randNumber();
      default: return pick(strPool);
    }
  }
  if (r < 0.55) return Array.from({ length: Math.floor(rnd() * 4) }, () => randValue(depth + 1));
  const n = Math.floor(rnd() * 6);
  const parts = [];
  for (let i = 0; i < n; i++) parts.push(`${JSON.stringify(pick(keyPool))}:${JSON.stringify(randValue(depth + 1))}`);
  return { __raw: `{${parts.join(',')}}` };
}
// Objects are emitted as raw text so duplicate and __proto__ keys reach JSON.parse.
function toText(v) {
  if (v && typeof v === 'object' && '__raw' in v) return v.__raw.replace(/"__RAW__"/g, '');
  if (Array.isArray(v)) return `[${v.map(toText).join(',')}]`;
  return JSON.stringify(v);
}
function randText(depth) {
  const r = rnd();
  if (depth >= 4 || r < 0.3) return toText(randValue(4));
  if (r < 0.5) return `[${Array.from({ length: Math.floor(rnd() * 4) }, () => randText(depth + 1)).join(',')}]`;
  const n = Math.floor(rnd() * 7);
  const parts = [];
  for (let i = 0; i < n; i++) parts.push(`${JSON.stringify(pick(keyPool))}:${randText(depth + 1)}`);
  return `{${parts.join(',')}}`;
}
const exprPool = ['a', 'A', 'a.b', '*', '[*]', '@', 'keys(@)', 'values(@)', '[a, A, b]', '{x: a, y: B}', 'a[0]', '[?a]', 'to_string(@)', 'length(@)', '*.a', 'a || b', 'a && B', '!a', 'type(@)', 'not_null(a, b, A)', 'merge(@, `{"z":1}`)', '[0:2]', '[]'];
for (let i = 0; i < 150; i++) {
  const c = { name: `random_${String(i).padStart(3, '0')}`, json: randText(0) };
  if (i % 3 === 2) c.eventKeyJmesPath = pick(exprPool);
  keyCases.push(c);
}

const hashCases = ['md5', 'sha1', 'sha256', 'sha384', 'sha512'].map((h) => ({
  name: `hash_${h}`, json: '{"id":"ORD-123","amount":42}', hashFunction: h,
}));

function layerFor(c, client) {
  const layer = new DynamoDBPersistenceLayer({ tableName: 'golden', awsSdkV3Client: client ?? new DynamoDBClient({ region: 'us-east-1' }) });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: c.eventKeyJmesPath,
    payloadValidationJmesPath: c.payloadValidationJmesPath,
    hashFunction: c.hashFunction,
  });
  layer.configure({ config, keyPrefix: c.keyPrefix ?? 'golden' });
  return layer;
}

const keys = [];
for (const c of [...keyCases, ...hashCases]) {
  const data = JSON.parse(c.json);
  const layer = layerFor(c);
  const entry = {
    name: c.name,
    payload_b64: Buffer.from(c.json, 'utf8').toString('base64'),
    payload: c.json,
    prefix: c.keyPrefix ?? 'golden',
    hash_function: c.hashFunction ?? 'md5',
  };
  if (c.eventKeyJmesPath) entry.event_key_jmespath = c.eventKeyJmesPath;
  try {
    entry.key = layer.getHashedIdempotencyKey(data);
  } catch (e) {
    entry.error = e.name;
  }
  keys.push(entry);
}

// Invalid UTF-8 reaches JSON.parse through Node's WHATWG decoder.
const rawByteCases = [
  { name: 'invalid_utf8_lone_continuation', bytes: [0x22, 0x61, 0x80, 0x62, 0x22] },
  { name: 'invalid_utf8_truncated_4byte', bytes: [0x22, 0xf0, 0x9f, 0x98, 0x22] },
  { name: 'invalid_utf8_overlong', bytes: [0x22, 0xe0, 0x80, 0x80, 0x22] },
  { name: 'invalid_utf8_surrogate', bytes: [0x22, 0xed, 0xa0, 0x80, 0x22] },
  { name: 'invalid_utf8_f5', bytes: [0x22, 0xf5, 0x41, 0x22] },
];
for (const c of rawByteCases) {
  const buf = Buffer.from(c.bytes);
  const data = JSON.parse(buf.toString('utf8'));
  keys.push({
    name: c.name,
    payload_b64: buf.toString('base64'),
    prefix: 'golden',
    hash_function: 'md5',
    key: layerFor({}).getHashedIdempotencyKey(data),
  });
}

// Canonical JSON: what the key hashes, for readable diffs in Go test failures.
import { deepSort } from './node_modules/@aws-lambda-powertools/idempotency/lib/esm/deepSort.js';
import { search } from '@aws-lambda-powertools/jmespath';
import { PowertoolsFunctions } from '@aws-lambda-powertools/jmespath/functions';
for (const k of keys) {
  if (k.error) continue;
  const raw = Buffer.from(k.payload_b64, 'base64').toString('utf8');
  let data = JSON.parse(raw);
  if (k.event_key_jmespath) {
    data = search(k.event_key_jmespath, data, { customFunctions: new PowertoolsFunctions() });
    // IdempotencyHandler.shouldSkipIdempotency: the handler runs without idempotency.
    if (data === null || data === undefined) k.bypass = true;
  }
  k.canonical = JSON.stringify(deepSort(data));
}

writeFileSync(path.join(outDir, 'keys.json'), JSON.stringify({ generator: `@aws-lambda-powertools/idempotency@${version}`, node: process.version, cases: keys }, null, 2) + '\n');

// DynamoDB: capture every command the reference layer sends, answering from a script.
function recordingClient(responder) {
  const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
  const calls = [];
  client.middlewareStack.add((next, context) => async (args) => {
    calls.push({ command: context.commandName, input: structuredClone(args.input) });
    return { output: await responder(context.commandName, args.input, calls.length), response: {} };
  }, { step: 'initialize', name: 'goldenRecorder', priority: 'high' });
  return { client, calls };
}

const scenarios = [];
async function scenario(name, opts, responder, invoke) {
  const { client, calls } = recordingClient(responder);
  const layer = new DynamoDBPersistenceLayer({
    tableName: 'idempotency',
    awsSdkV3Client: client,
    ...(opts.layer ?? {}),
  });
  const config = new IdempotencyConfig(opts.config ?? {});
  const handler = makeIdempotent(opts.fn ?? (async (event) => ({ order_id: event.id, ok: true, n: [1, 2.5], nested: { b: null } })), {
    persistenceStore: layer, config, keyPrefix: opts.keyPrefix ?? 'process-order',
  });
  let result, error;
  try {
    result = await invoke(handler);
  } catch (e) {
    error = e.name;
  }
  scenarios.push({ name, event: opts.event, options: opts.describe ?? {}, calls, result, error });
}

const event = { id: 'ORD-123', amount: 42 };
const ok = async () => ({});
const conflict = (item) => async (cmd) => {
  if (cmd === 'PutItemCommand') {
    throw new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {}, Item: item });
  }
  return {};
};

await scenario('first_call_with_validation', {
  event,
  config: { eventKeyJmesPath: 'id', payloadValidationJmesPath: 'amount', throwOnNoIdempotencyKey: true },
  describe: { eventKeyJmesPath: 'id', payloadValidationJmesPath: 'amount', throwOnNoKey: true, remainingMillis: REMAINING_MS },
}, ok, (h) => h(event, lambdaContext));

await scenario('first_call_no_context', {
  event,
  config: { expiresAfterSeconds: 60 },
  describe: { expiresAfterSeconds: 60 },
}, ok, (h) => h(event));

await scenario('sort_key_layout', {
  event,
  layer: { sortKeyAttr: 'sk', staticPkValue: 'idempotency#orders', keyAttr: 'pk', statusAttr: 'st', expiryAttr: 'ttl', inProgressExpiryAttr: 'lease', dataAttr: 'resp', validationKeyAttr: 'hash' },
  config: { eventKeyJmesPath: 'id', payloadValidationJmesPath: 'amount' },
  describe: { sortKeyAttr: 'sk', staticPkValue: 'idempotency#orders', keyAttr: 'pk', statusAttr: 'st', expiryAttr: 'ttl', inProgressExpiryAttr: 'lease', dataAttr: 'resp', validationKeyAttr: 'hash', eventKeyJmesPath: 'id', payloadValidationJmesPath: 'amount', remainingMillis: REMAINING_MS },
}, ok, (h) => h(event, lambdaContext));

await scenario('business_error_deletes', {
  event,
  fn: async () => { throw new Error('boom'); },
  config: { eventKeyJmesPath: 'id' },
  describe: { eventKeyJmesPath: 'id', remainingMillis: REMAINING_MS },
}, ok, (h) => h(event, lambdaContext));

const hashOf = (layerOpts, cfg, ev) => {
  const l = new DynamoDBPersistenceLayer({ tableName: 'idempotency', awsSdkV3Client: new DynamoDBClient({ region: 'us-east-1' }), ...layerOpts });
  l.configure({ config: new IdempotencyConfig(cfg), keyPrefix: 'process-order' });
  return { key: l.getHashedIdempotencyKey(ev), payloadHash: l.getHashedPayload(ev) };
};
const h1 = hashOf({}, { eventKeyJmesPath: 'id', payloadValidationJmesPath: 'amount' }, event);
const completedItem = {
  id: { S: h1.key }, status: { S: 'COMPLETED' }, expiration: { N: String(Math.round(NOW / 1000) + 3000) },
  in_progress_expiration: { N: String(NOW - 1000) }, validation: { S: h1.payloadHash },
  data: { M: { order_id: { S: 'ORD-123' }, ok: { BOOL: true }, n: { L: [{ N: '1' }, { N: '2.5' }] }, nested: { M: { b: { NULL: true } } } } },
};
await scenario('replay_completed_from_all_old', {
  event, config: { eventKeyJmesPath: 'id', payloadValidationJmesPath: 'amount' },
  describe: { eventKeyJmesPath: 'id', payloadValidationJmesPath: 'amount', remainingMillis: REMAINING_MS, existing: completedItem },
}, conflict(completedItem), (h) => h(event, lambdaContext));

await scenario('validation_mismatch', {
  event: { id: 'ORD-123', amount: 43 }, config: { eventKeyJmesPath: 'id', payloadValidationJmesPath: 'amount' },
  describe: { eventKeyJmesPath: 'id', payloadValidationJmesPath: 'amount', remainingMillis: REMAINING_MS, existing: completedItem },
}, conflict(completedItem), (h) => h({ id: 'ORD-123', amount: 43 }, lambdaContext));

const inProgressItem = {
  id: { S: h1.key }, status: { S: 'INPROGRESS' }, expiration: { N: String(Math.round(NOW / 1000) + 3000) },
  in_progress_expiration: { N: String(NOW + 5000) },
};
await scenario('in_progress_rejected', {
  event, config: { eventKeyJmesPath: 'id' },
  describe: { eventKeyJmesPath: 'id', remainingMillis: REMAINING_MS, existing: inProgressItem },
}, conflict(inProgressItem), (h) => h(event, lambdaContext));

// A conflict without ALL_OLD falls back to a strongly consistent GetItem.
await scenario('conflict_without_item_reads', {
  event, config: { eventKeyJmesPath: 'id', payloadValidationJmesPath: 'amount' },
  describe: { eventKeyJmesPath: 'id', payloadValidationJmesPath: 'amount', remainingMillis: REMAINING_MS, existing: completedItem, allOld: false },
}, async (cmd) => {
  if (cmd === 'PutItemCommand') throw new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });
  if (cmd === 'GetItemCommand') return { Item: completedItem };
  return {};
}, (h) => h(event, lambdaContext));

writeFileSync(path.join(outDir, 'dynamodb.json'), JSON.stringify({ generator: `@aws-lambda-powertools/idempotency@${version}`, now_millis: NOW, scenarios }, null, 2) + '\n');

// Cache (Redis/Valkey) layer: capture the SET/GET/DEL calls with their options.
const cacheScenarios = [];
async function cacheScenario(name, opts, store, invoke) {
  const calls = [];
  const client = {
    async set(key, value, o) {
      calls.push({ op: 'set', key, value, options: o });
      if (o?.NX && key in store) return null;
      store[key] = value;
      return 'OK';
    },
    async get(key) { calls.push({ op: 'get', key }); return key in store ? store[key] : null; },
    async del(keys) { calls.push({ op: 'del', keys }); for (const k of keys) delete store[k]; return 1; },
  };
  const layer = new CachePersistenceLayer({ client });
  const config = new IdempotencyConfig(opts.config ?? {});
  const handler = makeIdempotent(opts.fn ?? (async (ev) => ({ order_id: ev.id })), { persistenceStore: layer, config, keyPrefix: 'process-order' });
  let result, error;
  try { result = await invoke(handler); } catch (e) { error = e.name; }
  cacheScenarios.push({ name, event: opts.event, options: opts.describe ?? {}, calls, result, error });
}
await cacheScenario('first_call', { event, config: { eventKeyJmesPath: 'id', payloadValidationJmesPath: 'amount' }, describe: { eventKeyJmesPath: 'id', payloadValidationJmesPath: 'amount', remainingMillis: REMAINING_MS } }, {}, (h) => h(event, lambdaContext));
const cacheCompleted = JSON.stringify({ status: 'COMPLETED', expiration: Math.round(NOW / 1000) + 3000, data: { order_id: 'ORD-123' } });
await cacheScenario('replay_completed', { event, config: { eventKeyJmesPath: 'id' }, describe: { eventKeyJmesPath: 'id', remainingMillis: REMAINING_MS, existing: cacheCompleted } }, { [hashOf({}, { eventKeyJmesPath: 'id' }, event).key]: cacheCompleted }, (h) => h(event, lambdaContext));
const cacheOrphan = JSON.stringify({ status: 'INPROGRESS', expiration: Math.round(NOW / 1000) + 3000, in_progress_expiration: NOW - 1 });
await cacheScenario('orphan_in_progress_takeover', { event, config: { eventKeyJmesPath: 'id' }, describe: { eventKeyJmesPath: 'id', remainingMillis: REMAINING_MS, existing: cacheOrphan } }, { [hashOf({}, { eventKeyJmesPath: 'id' }, event).key]: cacheOrphan }, (h) => h(event, lambdaContext));
await cacheScenario('business_error_deletes', { event, fn: async () => { throw new Error('boom'); }, config: { eventKeyJmesPath: 'id' }, describe: { eventKeyJmesPath: 'id', remainingMillis: REMAINING_MS } }, {}, (h) => h(event, lambdaContext));
writeFileSync(path.join(outDir, 'cache.json'), JSON.stringify({ generator: `@aws-lambda-powertools/idempotency@${version}`, now_millis: NOW, scenarios: cacheScenarios }, null, 2) + '\n');
// String.prototype.toLowerCase for every code point it changes (deepSort's key order
// depends on it).
const lower = {};
for (let cp = 0; cp <= 0x10ffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const ch = String.fromCodePoint(cp);
  const l = ch.toLowerCase();
  if (l !== ch) lower[cp] = [...l].map((c) => c.codePointAt(0));
}
writeFileSync(path.join(outDir, 'lowercase.json'), JSON.stringify(lower) + '\n');
console.log(`wrote ${keys.length} key cases, ${scenarios.length} DynamoDB scenarios, ${cacheScenarios.length} cache scenarios to ${outDir}`);
