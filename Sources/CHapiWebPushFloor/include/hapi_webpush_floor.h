#ifndef HAPI_WEBPUSH_FLOOR_H
#define HAPI_WEBPUSH_FLOOR_H
/* `make bench`'s floor for one Web Push seal (RFC 8291, aes128gcm): only what every message must
   cost, the cheapest way OpenSSL 3's EVP interface allows, in C. Everything that can be made once
   is made once (the key-generation context set to P-256, the browser's key parsed and checked, the
   HMAC and AES-128-GCM contexts with their algorithms fetched); per message: a fresh P-256 key and
   its encoding, one ECDH, a random salt, five HMAC-SHA-256 (the HKDFs) and one AES-128-GCM record.
   Not a product: only the bench links it. */
#include <stddef.h>
#include <stdint.h>

typedef struct hapi_webpush_floor hapi_webpush_floor;

/* NULL if OpenSSL refuses the key (65-byte uncompressed P-256 point) or the auth secret (16 bytes). */
hapi_webpush_floor *hapi_webpush_floor_new(const uint8_t *peer_point, size_t peer_length, const uint8_t *auth, size_t auth_length);
void hapi_webpush_floor_free(hapi_webpush_floor *floor);
/* One message with a fresh key and salt: the body's length (86 + n + 17), 0 on failure or when
   `capacity` is short. */
size_t hapi_webpush_floor_seal(hapi_webpush_floor *floor, const uint8_t *plaintext, size_t n, uint8_t *out, size_t capacity);
/* `openssl speed ecdhp256`'s measure: EVP_PKEY_derive alone on a context prepared once (fixed
   private key, peer set once). 1 on success. */
int hapi_webpush_floor_ecdh(hapi_webpush_floor *floor);
#endif
