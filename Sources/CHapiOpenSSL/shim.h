#ifndef HAPI_OPENSSL_SHIM_H
#define HAPI_OPENSSL_SHIM_H

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/pem.h>
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
