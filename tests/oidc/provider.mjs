// A real OpenID provider (the npm package oidc-provider) for the staff single sign-on tests.
//
//   node tests/oidc/provider.mjs <port> <state.json>
//
// The test controls it through the JSON file, re-read on every request:
//   {"client": {"client_id", "client_secret", "redirect_uris": [...]},
//    "accounts": {"<login>": {"password", "email", "groups": [...], "amr": [...]}},
//    "tamper": {"nonce": "<other nonce>"} | {"exp_offset": -600} | {}}
// "tamper" re-signs the ID token the token endpoint returns, with the provider's own key, so the
// relying party sees a correctly signed token whose nonce or expiry is wrong.
import fs from 'node:fs';
import http from 'node:http';
import { randomUUID } from 'node:crypto';

import Provider from 'oidc-provider';
import { SignJWT, decodeJwt, exportJWK, generateKeyPair, importJWK } from 'jose';

const port = Number(process.argv[2]);
const statePath = process.argv[3];
const issuer = `http://127.0.0.1:${port}`;
const state = () => JSON.parse(fs.readFileSync(statePath, 'utf8'));

const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const jwk = { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: 'RS256', use: 'sig' };
const signingKey = await importJWK(jwk, 'RS256');
const client = state().client;

const provider = new Provider(issuer, {
  clients: [{
    client_id: client.client_id,
    client_secret: client.client_secret,
    redirect_uris: client.redirect_uris,
    response_types: ['code'],
    grant_types: ['authorization_code'],
    token_endpoint_auth_method: 'client_secret_post',
  }],
  jwks: { keys: [jwk] },
  cookies: { keys: ['test-only-cookie-key'] },
  claims: {
    openid: ['sub', 'amr'],
    email: ['email', 'email_verified'],
    profile: ['preferred_username', 'name'],
    groups: ['groups'],
  },
  scopes: ['openid', 'email', 'profile', 'groups'],
  conformIdTokenClaims: false, // groups travel in the ID token, as Entra ID and Okta can send them
  features: { devInteractions: { enabled: false } },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  async findAccount(ctx, id) {
    const account = state().accounts[id];
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        return {
          sub: id, email: account.email, email_verified: true, preferred_username: id,
          name: account.name || id, groups: account.groups || [], amr: account.amr || ['pwd'],
        };
      },
    };
  },
  // First-party application: no consent screen, the grant is made on the spot.
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid email profile groups');
    await grant.save();
    return grant;
  },
});

provider.use(async (ctx, next) => {
  await next();
  const tamper = state().tamper || {};
  if (ctx.path !== '/token' || !ctx.body || !ctx.body.id_token || !Object.keys(tamper).length) {
    return;
  }
  const claims = decodeJwt(ctx.body.id_token);
  if (tamper.nonce !== undefined) claims.nonce = tamper.nonce;
  if (tamper.exp_offset !== undefined) {
    const now = Math.floor(Date.now() / 1000);
    claims.exp = now + tamper.exp_offset;
    claims.iat = claims.exp - 3600;
  }
  ctx.body = {
    ...ctx.body,
    id_token: await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: jwk.kid, typ: 'JWT' })
      .sign(signingKey),
  };
});

const escape = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

async function readForm(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return Object.fromEntries(new URLSearchParams(body));
}

async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const uid = details.uid;
  if (req.method === 'POST') {
    const form = await readForm(req);
    const account = state().accounts[form.login];
    if (!account || account.password !== form.password) {
      res.writeHead(401, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<p id="error">Wrong login or password.</p>');
      return;
    }
    await provider.interactionFinished(
      req, res, { login: { accountId: form.login, amr: account.amr || ['pwd'] } },
      { mergeWithLastSubmission: false },
    );
    return;
  }
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(`<!doctype html><title>Test identity provider</title>
<form method="post" action="/interaction/${escape(uid)}">
<label>Login <input name="login" autocomplete="username"></label>
<label>Password <input name="password" type="password"></label>
<button type="submit">Sign in</button></form>`);
}

const handler = provider.callback();
http.createServer((req, res) => {
  if (req.url.startsWith('/interaction/')) {
    interaction(req, res).catch((error) => {
      res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(String(error && error.message));
    });
    return;
  }
  handler(req, res);
}).listen(port, '127.0.0.1', () => console.log(`oidc-provider listening on ${issuer}`));
