// node-postgres against sqlstreams; run by client_node_test.go, which
// gives the connection in PGHOST, PGPORT, PGUSER and PGDATABASE. It prints
// "ok <check>" per passing check and exits non-zero on the first failure.
'use strict';
const { Client, Query } = require('pg');
const assert = require('assert');

function ok(name) { console.log('ok ' + name); }

async function main() {
  const client = new Client();
  await client.connect();

  const v = await client.query('SELECT version()');
  assert.match(v.rows[0].version, /^PostgreSQL 15/);
  ok('version');

  await client.query("CREATE STREAM NODE_S (ID INT KEY, NAME STRING, AMOUNT DOUBLE, OK BOOLEAN, AT TIMESTAMP, TAGS ARRAY<STRING>) WITH (KAFKA_TOPIC='node_s', VALUE_FORMAT='JSON', PARTITIONS=1)");
  await client.query("SET 'auto.offset.reset'='earliest'");
  ok('create');

  // Extended protocol: parameters sent as text with no type; pgwire types
  // them from the stream's columns.
  const at = new Date(Date.UTC(2024, 1, 29, 13, 14, 15, 123));
  const name = "o'neil \\ -- x";
  const ins = await client.query('INSERT INTO NODE_S (ID, NAME, AMOUNT, OK, AT) VALUES ($1, $2, $3, $4, $5)', [1, name, 2.5, true, at]);
  assert.strictEqual(ins.command, 'INSERT');
  assert.strictEqual(ins.rowCount, 1);
  await client.query("INSERT INTO NODE_S (ID, NAME, TAGS) VALUES (2, 'plain', ARRAY['a', 'b'])");
  ok('insert');

  const r = await client.query('SELECT ID, NAME, AMOUNT, OK, AT FROM NODE_S WHERE ID = $1 EMIT CHANGES LIMIT $2', [1, 1]);
  assert.deepStrictEqual(r.fields.map(f => f.dataTypeID), [23, 25, 701, 16, 1114]);
  const row = r.rows[0];
  assert.strictEqual(row.id, undefined); // column names are upper case
  assert.strictEqual(row.ID, 1);
  assert.strictEqual(row.NAME, name);
  assert.strictEqual(row.AMOUNT, 2.5);
  assert.strictEqual(row.OK, true);
  assert.strictEqual(row.AT.getTime(), at.getTime());
  ok('select with parameter');

  const t = await client.query('SELECT TAGS FROM NODE_S WHERE ID = 2 EMIT CHANGES LIMIT 1');
  assert.deepStrictEqual(t.rows[0].TAGS, ['a', 'b']); // json, parsed
  ok('json array');

  // Rows of a push query arrive as they are produced.
  const writer = new Client();
  await writer.connect();
  const seen = [];
  const q = client.query(new Query('SELECT ID FROM NODE_S WHERE ID >= 10 EMIT CHANGES'));
  const ended = new Promise(resolve => { q.on('error', resolve); q.on('end', resolve); });
  const nextRow = () => new Promise(resolve => q.once('row', r => { seen.push(r.ID); resolve(); }));
  for (const id of [10, 11]) {
    const arrived = nextRow();
    await new Promise(res => setTimeout(res, 200));
    await writer.query('INSERT INTO NODE_S (ID) VALUES ($1)', [id]);
    await arrived;
  }
  assert.deepStrictEqual(seen, [10, 11]);
  ok('push rows stream');

  // Closing the connection ends the query on the server.
  client.on('error', () => {});
  client.connection.stream.destroy();
  await ended;
  await writer.query('SELECT 1');
  await writer.end();
  ok('closed during push');
}

main().catch(err => { console.error('FAIL', err); process.exit(1); });
