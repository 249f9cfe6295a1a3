import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import express from 'express';
import { createHttpServer } from '../../lib/http/http-server';

describe('createHttpServer', () => {
  it('serves an Express app with request and response objects born with the app prototypes', async () => {
    const app = express();
    const seen: boolean[] = [];
    app.use((req, res, next) => {
      seen.push(Object.getPrototypeOf(req) === app.request, Object.getPrototypeOf(res) === app.response);
      next();
    });
    app.post('/echo/:name', express.json(), (req, res) => {
      res.status(201).set('x-path', req.path).json({ name: req.params.name, body: req.body, query: req.query });
    });
    const server = createHttpServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      for (let i = 0; i < 2; i++) {
        const reply = await fetch(`http://127.0.0.1:${port}/echo/abc?x=1`, {
          method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: i }),
        });
        expect(reply.status).to.equal(201);
        expect(reply.headers.get('x-path')).to.equal('/echo/abc');
        expect(await reply.json()).to.deep.equal({ name: 'abc', body: { n: i }, query: { x: '1' } });
      }
      const missing = await fetch(`http://127.0.0.1:${port}/nowhere`);
      expect(missing.status).to.equal(404);
      expect(seen).to.deep.equal([true, true, true, true, true, true]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
