#ifndef HAPI_OPENSSL_SHIM_H
#define HAPI_OPENSSL_SHIM_H

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/decoder.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/param_build.h>
#include <string.h>

/* OPENSSL_free is a macro; Swift needs a function. */
static inline void hapi_openssl_free(void *ptr) { OPENSSL_free(ptr); }

/* BIO_get_mem_data is a macro over BIO_ctrl. */
static inline long hapi_openssl_bio_mem_data(BIO *bio, char **out) {
    return BIO_get_mem_data(bio, out);
}

/* TLS client setup for the HTTP/2 engine: these are macros over SSL_CTX_ctrl / SSL_ctrl. */
static inline int hapi_ssl_ctx_set_min_tls12(SSL_CTX *ctx) { return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); }
static inline long hapi_ssl_ctx_set_client_modes(SSL_CTX *ctx) {
    return SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
}
static inline int hapi_ssl_set_sni(SSL *ssl, const char *name) { return (int)SSL_set_tlsext_host_name(ssl, name); }

/* PEM reading that never prompts. With a NULL callback OpenSSL's default one asks for a pass
   phrase on the terminal (or on stderr without one) and blocks the caller: a library must never.
   This callback refuses every pass phrase and records, through `asked` (an int, may be NULL),
   that one was wanted, so the caller can say "encrypted" rather than "malformed". */
static inline int hapi_pem_refuse_passphrase(char *buffer, int size, int rwflag, void *asked) {
    (void)buffer; (void)size; (void)rwflag;
    if (asked != NULL) *(int *)asked = 1;
    return -1;
}
static inline EVP_PKEY *hapi_pem_read_private_key_no_prompt(BIO *bio, int *asked) {
    return PEM_read_bio_PrivateKey(bio, NULL, hapi_pem_refuse_passphrase, asked);
}
/* The same, asking OpenSSL 3 only for a private key of `keytype` ("EC", "RSA"): PEM_read_bio_PrivateKey
   sets up a decoder chain for every key type and structure OpenSSL knows (~0.6 ms for a P-256
   PKCS#8 key here), one of a named type ~0.15 ms. NULL when that decoder reads nothing or what it
   read has no private part (`private_param`: "priv" for EC, "d" for RSA, the general reader's own
   check): the caller then asks the general reader, which names the type it found. Errors queued
   before the call are kept; its own are dropped. */
static inline EVP_PKEY *hapi_pem_read_private_key_of_type_no_prompt(
    const unsigned char *data, size_t length, const char *keytype, const char *private_param, int *asked) {
    EVP_PKEY *key = NULL;
    ERR_set_mark();
    OSSL_DECODER_CTX *decoder = OSSL_DECODER_CTX_new_for_pkey(&key, "PEM", NULL, keytype, EVP_PKEY_KEYPAIR, NULL, NULL);
    int decoded = decoder != NULL && OSSL_DECODER_CTX_get_num_decoders(decoder) > 0
        && OSSL_DECODER_CTX_set_pem_password_cb(decoder, hapi_pem_refuse_passphrase, asked) == 1
        && OSSL_DECODER_from_data(decoder, &data, &length) == 1 && key != NULL;
    OSSL_DECODER_CTX_free(decoder);
    if (decoded) {
        BIGNUM *secret = NULL;
        decoded = EVP_PKEY_get_bn_param(key, private_param, &secret) == 1 && secret != NULL;
        BN_clear_free(secret);
    }
    ERR_pop_to_mark();
    if (!decoded) {
        EVP_PKEY_free(key);
        return NULL;
    }
    return key;
}
static inline X509 *hapi_pem_read_x509_no_prompt(BIO *bio) {
    return PEM_read_bio_X509(bio, NULL, hapi_pem_refuse_passphrase, NULL);
}
static inline EVP_PKEY *hapi_pem_read_pubkey_no_prompt(BIO *bio) {
    return PEM_read_bio_PUBKEY(bio, NULL, hapi_pem_refuse_passphrase, NULL);
}
/* Web Push (RFC 8291 / RFC 8292): the EVP_PKEY_fromdata selections are macros over other macros. */
static inline int hapi_evp_pkey_selection_keypair(void) { return EVP_PKEY_KEYPAIR; }
static inline int hapi_evp_pkey_selection_public(void) { return EVP_PKEY_PUBLIC_KEY; }
#endif
