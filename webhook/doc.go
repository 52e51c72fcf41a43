// Package webhook signs webhook deliveries the Standard Webhooks way and
// posts them with an HTTP client that will not be turned against the
// network it runs in.
//
// # Signing
//
// A delivery carries three headers (see [Headers]):
//
//	webhook-id:        a unique message id; receivers use it for idempotency
//	webhook-timestamp: the send time, in Unix seconds
//	webhook-signature: space-separated "v1,<base64 HMAC-SHA256>" entries
//
// Each signature is HMAC-SHA256 keyed with the endpoint's secret over
// id + "." + timestamp + "." + body. Secrets are exchanged as "whsec_" followed
// by the base64 of the key ([NewSecret], [ParseSecret]). To rotate a secret,
// sign with both the old and the new one for a while ([Sign] takes several);
// the receiver accepts the delivery if any one entry matches. [Verify] is the
// receiving side, for tests and for docket's own receivers; the output is
// checked in the tests against the reference JavaScript library.
//
// # Delivering
//
// [Client.Deliver] posts one attempt and classifies it as an [Outcome]: the
// caller retries [OutcomeRetry] with backoff (honouring Result.RetryAfter),
// disables the endpoint on [OutcomeGone], and reports [OutcomeRefused] to the
// endpoint's owner, since retrying will not help.
//
// Endpoint URLs come from users, so by default the client refuses to connect
// to loopback, private, carrier-grade NAT, link-local (which includes the
// cloud metadata service at 169.254.169.254) and unique-local addresses, and
// never to unspecified, multicast or reserved ones. The check runs on the IP
// address that is actually dialled, inside net.Dialer.Control, so a host name
// whose DNS answer changes between registration and delivery (DNS
// rebinding) cannot slip past it. Proxies from the environment are not used
// and redirects are not followed, for the same reason. [ValidateURL] gives
// early feedback when an endpoint is registered.
package webhook
