#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Test certificates, made with openssl at test time (nothing secret is in the repo):
#   tls_certs.sh DIR
# writes into DIR (keys 0600, EC P-256):
#   ca.pem ca.key            "brooq test CA"
#   server.pem server.key    the gateway: CN=localhost, SAN DNS:localhost, DNS:127.0.0.1,
#                            IP:127.0.0.1 (mbedtls 2.28 matches a dialled name against
#                            DNS names only, so the address is a DNS name too), serverAuth
#   client.pem client.key    a worker: CN=brooq-test-worker, clientAuth
#   expired.pem expired.key  the gateway's names again, expired yesterday
#   ca2.pem ca2.key          a second, unrelated CA
#   client2.pem client2.key  a worker certificate from the second CA
#   server-chain.pem         server.pem followed by ca.pem
#   revoked.pem revoked.key  a worker certificate from ca, revoked
#   ca-crl.pem               ca.pem followed by ca's CRL, which lists revoked.pem
# Idempotent: a DIR where a previous run completed is left as it is.
set -euo pipefail
dir=${1:?usage: tls_certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
[ -f .complete ] && exit 0
umask 077

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

ca() { # ca NAME CN
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 30 -subj "/CN=$2" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}

leaf() { # leaf NAME CA CN DAYS EXTFILE-CONTENT
  key "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$3" 2>/dev/null
  printf '%s\n' "$5" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days "$4" \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

server_ext='basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,DNS:127.0.0.1,IP:127.0.0.1'
client_ext='basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth'

ca ca "brooq test CA"
ca ca2 "another test CA"
leaf server ca localhost 30 "$server_ext"
leaf client ca brooq-test-worker 30 "$client_ext"
leaf client2 ca2 brooq-test-worker 30 "$client_ext"
# -days -1: valid until yesterday (openssl 3.0 accepts nothing lower).
leaf expired ca localhost -1 "$server_ext"
cat server.pem ca.pem >server-chain.pem
leaf revoked ca brooq-revoked-worker 30 "$client_ext"
mkdir -p ca-db
: >ca-db/index.txt
echo 1000 >ca-db/crlnumber
printf '[ca]\ndefault_ca=c\n[c]\ndatabase=ca-db/index.txt\ncrlnumber=ca-db/crlnumber\ndefault_md=sha256\ndefault_crl_days=30\n' >ca-db/ca.cnf
openssl ca -batch -config ca-db/ca.cnf -cert ca.pem -keyfile ca.key -revoke revoked.pem 2>/dev/null
openssl ca -batch -config ca-db/ca.cnf -cert ca.pem -keyfile ca.key -gencrl -out ca-db/ca.crl 2>/dev/null
cat ca.pem ca-db/ca.crl >ca-crl.pem
rm -rf ca-db
chmod 0644 ./*.pem
rm -f ./*.srl
touch .complete
