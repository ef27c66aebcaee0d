#include "hapi_webpush_floor.h"

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

struct hapi_webpush_floor {
    EVP_PKEY_CTX *keygen;
    EVP_PKEY *peer;
    uint8_t peer_point[65];
    uint8_t auth[16];
    EVP_MAC *mac;
    EVP_MAC_CTX *hmac;
    EVP_CIPHER *cipher;
    EVP_CIPHER_CTX *aes;
    /* ECDH alone: a fixed key pair's derive context, the peer set once. */
    EVP_PKEY *fixed;
    EVP_PKEY_CTX *exchange;
};

void hapi_webpush_floor_free(hapi_webpush_floor *f) {
    if (f == NULL) return;
    EVP_PKEY_CTX_free(f->exchange);
    EVP_PKEY_free(f->fixed);
    EVP_CIPHER_CTX_free(f->aes);
    EVP_CIPHER_free(f->cipher);
    EVP_MAC_CTX_free(f->hmac);
    EVP_MAC_free(f->mac);
    EVP_PKEY_free(f->peer);
    EVP_PKEY_CTX_free(f->keygen);
    free(f);
}

hapi_webpush_floor *hapi_webpush_floor_new(const uint8_t *peer_point, size_t peer_length, const uint8_t *auth, size_t auth_length) {
    if (peer_length != 65 || auth_length != 16) return NULL;
    hapi_webpush_floor *f = calloc(1, sizeof *f);
    if (f == NULL) return NULL;
    memcpy(f->peer_point, peer_point, 65);
    memcpy(f->auth, auth, 16);
    char group[] = "prime256v1", digest[] = "SHA256";
    OSSL_PARAM key_params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
        OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, f->peer_point, 65),
        OSSL_PARAM_construct_end(),
    };
    OSSL_PARAM mac_params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0), OSSL_PARAM_construct_end()};
    EVP_PKEY_CTX *import = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    int ok = import != NULL && EVP_PKEY_fromdata_init(import) == 1 && EVP_PKEY_fromdata(import, &f->peer, EVP_PKEY_PUBLIC_KEY, key_params) == 1;
    EVP_PKEY_CTX_free(import);
    f->keygen = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    ok = ok && f->keygen != NULL && EVP_PKEY_keygen_init(f->keygen) == 1 && EVP_PKEY_CTX_set_group_name(f->keygen, "P-256") == 1;
    ok = ok && (f->mac = EVP_MAC_fetch(NULL, "HMAC", NULL)) != NULL && (f->hmac = EVP_MAC_CTX_new(f->mac)) != NULL &&
         EVP_MAC_CTX_set_params(f->hmac, mac_params) == 1;
    ok = ok && (f->cipher = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL)) != NULL && (f->aes = EVP_CIPHER_CTX_new()) != NULL &&
         EVP_EncryptInit_ex(f->aes, f->cipher, NULL, NULL, NULL) == 1;
    ok = ok && EVP_PKEY_generate(f->keygen, &f->fixed) == 1 && (f->exchange = EVP_PKEY_CTX_new_from_pkey(NULL, f->fixed, NULL)) != NULL &&
         EVP_PKEY_derive_init(f->exchange) == 1 && EVP_PKEY_derive_set_peer(f->exchange, f->peer) == 1;
    if (!ok) {
        ERR_clear_error();
        hapi_webpush_floor_free(f);
        return NULL;
    }
    return f;
}

static int hmac(hapi_webpush_floor *f, const uint8_t *key, size_t key_length, const uint8_t *data, size_t length, uint8_t out[32]) {
    size_t written = 0;
    return EVP_MAC_init(f->hmac, key, key_length, NULL) == 1 && EVP_MAC_update(f->hmac, data, length) == 1 &&
           EVP_MAC_final(f->hmac, out, &written, 32) == 1 && written == 32;
}

size_t hapi_webpush_floor_seal(hapi_webpush_floor *f, const uint8_t *plaintext, size_t n, uint8_t *out, size_t capacity) {
    static const uint8_t key_info_prefix[14] = "WebPush: info";
    static const uint8_t cek_info[29] = "Content-Encoding: aes128gcm\0\1";
    static const uint8_t nonce_info[25] = "Content-Encoding: nonce\0\1";
    static const uint8_t delimiter = 2;
    size_t total = 86 + n + 1 + 16;
    if (capacity < total || n > 3993) return 0;
    EVP_PKEY *key = NULL;
    if (EVP_PKEY_generate(f->keygen, &key) != 1) return 0;
    size_t point_length = 0, secret_length = 32;
    uint8_t secret[32], key_prk[32], ikm[32], prk[32], cek[32], nonce[32], info[14 + 130 + 1];
    int ok = EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, out + 21, 65, &point_length) == 1 && point_length == 65;
    EVP_PKEY_CTX *exchange = ok ? EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL) : NULL;
    ok = exchange != NULL && EVP_PKEY_derive_init(exchange) == 1 && EVP_PKEY_derive_set_peer_ex(exchange, f->peer, 0) == 1 &&
         EVP_PKEY_derive(exchange, secret, &secret_length) == 1 && RAND_bytes(out, 16) == 1;
    EVP_PKEY_CTX_free(exchange);
    EVP_PKEY_free(key);
    if (!ok) return 0;
    out[16] = 0; out[17] = 0; out[18] = 0x10; out[19] = 0; out[20] = 65;
    memcpy(info, key_info_prefix, 14);
    memcpy(info + 14, f->peer_point, 65);
    memcpy(info + 79, out + 21, 65);
    info[144] = 1;
    ok = hmac(f, f->auth, 16, secret, 32, key_prk) && hmac(f, key_prk, 32, info, sizeof info, ikm) && hmac(f, out, 16, ikm, 32, prk) &&
         hmac(f, prk, 32, cek_info, sizeof cek_info, cek) && hmac(f, prk, 32, nonce_info, sizeof nonce_info, nonce);
    uint8_t *record = out + 86;
    int length = 0, final_length = 0;
    ok = ok && EVP_EncryptInit_ex(f->aes, NULL, NULL, cek, nonce) == 1 && EVP_EncryptUpdate(f->aes, record, &length, plaintext, (int)n) == 1 &&
         EVP_EncryptUpdate(f->aes, record + n, &length, &delimiter, 1) == 1 && EVP_EncryptFinal_ex(f->aes, record + n + 1, &final_length) == 1 &&
         EVP_CIPHER_CTX_ctrl(f->aes, EVP_CTRL_GCM_GET_TAG, 16, record + n + 1) == 1;
    return ok ? total : 0;
}

int hapi_webpush_floor_ecdh(hapi_webpush_floor *f) {
    uint8_t secret[32];
    size_t length = sizeof secret;
    return EVP_PKEY_derive(f->exchange, secret, &length) == 1;
}
