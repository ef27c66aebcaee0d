#ifndef HAPI_TEST_OPENSSL_SHIM_H
#define HAPI_TEST_OPENSSL_SHIM_H

/* Key generation for tests and the demo only (PushTestSupport): kept out of the production
   shim (CHapiOpenSSL), so nothing an operator's binary links can mint throwaway keys. */

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/hmac.h>
#include <openssl/x509.h>
#include <string.h>

/* EVP_PKEY_Q_keygen takes variadic arguments (a size_t for RSA, a curve name for EC): typed wrappers. */
static inline EVP_PKEY *hapi_test_rsa_keygen(size_t bits) { return EVP_PKEY_Q_keygen(NULL, NULL, "RSA", bits); }
static inline EVP_PKEY *hapi_test_ec_keygen(const char *curve) { return EVP_PKEY_Q_keygen(NULL, NULL, "EC", curve); }

/* A PEM key encrypted with `passphrase` (PKCS#8, or the traditional "Proc-Type: 4,ENCRYPTED"
   form), to prove the production readers refuse it without prompting. */
static inline int hapi_test_write_encrypted_key(BIO *bio, EVP_PKEY *key, const char *passphrase, int traditional) {
    int length = (int)strlen(passphrase);
    if (traditional)
        return PEM_write_bio_PrivateKey_traditional(bio, key, EVP_aes_256_cbc(), (unsigned char *)passphrase, length, NULL, NULL);
    return PEM_write_bio_PKCS8PrivateKey(bio, key, EVP_aes_256_cbc(), passphrase, length, NULL, NULL);
}

/* The key in its type's own unencrypted PEM form (`EC PRIVATE KEY`, `RSA PRIVATE KEY`). */
static inline int hapi_test_write_traditional_key(BIO *bio, EVP_PKEY *key) {
    return PEM_write_bio_PrivateKey_traditional(bio, key, NULL, NULL, 0, NULL, NULL);
}

#endif
