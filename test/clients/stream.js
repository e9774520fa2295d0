// test/clients/stream.js: streams a query through node-postgres and
// pg-cursor, read(500) at a time until a read comes back empty (a portal,
// executed 500 rows at a time).  Prints every row as one line, columns
// tab-separated, NULL as \N, and nothing else, so that
// test/t/060_clients.pl can compare the lines with a single server's.
//
//   node stream.js HOST PORT DB USER QUERY [WRITE]
//
// pg and pg-cursor come from package.json here; the test installs them
// elsewhere and points NODE_PATH there.  Without WRITE the cursor runs in
// the implicit transaction of the extended protocol, as pg-cursor's own
// examples use it; with WRITE, the write and then the cursor run in one
// transaction (BEGIN ... ROLLBACK, so the tables stay as they were).
'use strict';

const { Client } = require('pg');
const Cursor = require('pg-cursor');

// every value as the server's text: no conversion to JavaScript numbers
const textTypes = { getTypeParser: () => (value) => value };

async function main() {
  const args = process.argv.slice(2);
  if (args.length !== 5 && args.length !== 6) {
    throw new Error('usage: node stream.js HOST PORT DB USER QUERY [WRITE]');
  }
  const [host, port, database, user, query, write] = args;
  const client = new Client({ host, port: Number(port), database, user });
  await client.connect();
  try {
    if (write !== undefined) {
      await client.query('BEGIN');
      await client.query(write);
    }
    const cursor = client.query(new Cursor(query, null, { rowMode: 'array', types: textTypes }));
    for (;;) {
      const rows = await cursor.read(500);
      if (rows.length === 0) break;
      let chunk = '';
      for (const row of rows) {
        chunk += row.map((v) => (v === null ? '\\N' : v)).join('\t') + '\n';
      }
      // wait for a full pipe to drain rather than buffer without bound
      if (!process.stdout.write(chunk)) {
        await new Promise((resolve) => process.stdout.once('drain', resolve));
      }
    }
    await cursor.close();
    if (write !== undefined) await client.query('ROLLBACK');
  } finally {
    await client.end();
  }
}

main().catch((err) => {
  process.stderr.write(`stream.js: ${err.message}\n`);
  process.exitCode = 1;
});
