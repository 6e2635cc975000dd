#!/usr/bin/env bash
# Makes a test certificate authority and certificates for Arbor's TLS (docs/SECURITY.md).
#
#   scripts/make-certs.sh OUT_DIR [NAME ...]
#
# writes OUT_DIR/ca.pem (the CA certificate: every process's --tls_ca) and ca.key (keep it
# away from the servers), and for each NAME (default: coordinator worker client) NAME.pem and
# NAME.key: a certificate signed by the CA that serves both as a server and as a client
# certificate (--tls_cert, --tls_key), valid for NAME, localhost, 127.0.0.1 and ::1, plus the
# subject alternative names in $SANS (e.g. SANS="DNS:arbor-coordinator,IP:10.0.0.5"). Keys are
# ECDSA P-256; certificates last $DAYS days (default 365). An existing CA in OUT_DIR is reused,
# so more names can be added later. For production, use your organisation's CA instead.
set -euo pipefail

if (($# < 1)) || [[ "$1" == -h || "$1" == --help ]]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
  exit $(($# < 1 ? 2 : 0))
fi
command -v openssl >/dev/null || { echo "make-certs: openssl is not installed" >&2; exit 1; }

readonly OUT="$1"
shift
readonly DAYS="${DAYS:-365}"
names=("$@")
((${#names[@]})) || names=(coordinator worker client)
mkdir -p "${OUT}"
umask 077

if [[ ! -f "${OUT}/ca.pem" ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "${DAYS}" \
    -subj "/CN=Arbor test CA" -keyout "${OUT}/ca.key" -out "${OUT}/ca.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null
fi

for name in "${names[@]}"; do
  san="DNS:${name},DNS:localhost,IP:127.0.0.1,IP:::1${SANS:+,${SANS}}"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=${name}" \
    -keyout "${OUT}/${name}.key" -out "${OUT}/${name}.csr" 2>/dev/null
  openssl x509 -req -in "${OUT}/${name}.csr" -CA "${OUT}/ca.pem" -CAkey "${OUT}/ca.key" \
    -CAcreateserial -days "${DAYS}" -out "${OUT}/${name}.pem" \
    -extfile <(printf '%s\n' "subjectAltName=${san}" "extendedKeyUsage=serverAuth,clientAuth" \
      "keyUsage=critical,digitalSignature,keyEncipherment" "basicConstraints=CA:FALSE") \
    2>/dev/null
  rm -f "${OUT}/${name}.csr"
done
chmod 644 "${OUT}"/*.pem
echo "make-certs: CA and ${names[*]} in ${OUT} (--tls_ca ${OUT}/ca.pem)"
