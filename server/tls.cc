#include "server/tls.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_certificate_verifier.h"
#include "grpcpp/security/tls_credentials_options.h"
#include "openssl/bio.h"
#include "openssl/err.h"
#include "openssl/evp.h"
#include "openssl/pem.h"
#include "openssl/x509.h"
#include "openssl/x509v3.h"

namespace graphopt {
namespace {

// Certificate and key files are small; anything larger is not one.
constexpr size_t kMaxPemBytes = size_t{1} << 20;

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* x509) const { X509_free(x509); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct GeneralNamesFree {
  void operator()(GENERAL_NAMES* names) const { GENERAL_NAMES_free(names); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

std::string Named(const FlagFile& file) { return absl::StrCat(file.flag, " '", file.path, "'"); }

absl::StatusOr<std::string> ReadPemFile(const FlagFile& file) {
  if (file.path.empty()) return absl::InvalidArgumentError(absl::StrCat(file.flag, " is empty"));
  std::FILE* f = std::fopen(file.path.c_str(), "rb");
  if (f == nullptr) {
    const int error = errno;
    const std::string message =
        absl::StrCat(Named(file), ": cannot open: ", std::strerror(error));
    return error == ENOENT ? absl::NotFoundError(message) : absl::InvalidArgumentError(message);
  }
  std::string text;
  char buffer[1 << 14];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof(buffer), f)) > 0 && text.size() <= kMaxPemBytes) {
    text.append(buffer, got);
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return absl::InvalidArgumentError(absl::StrCat(Named(file), ": cannot read"));
  if (text.size() > kMaxPemBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(Named(file), ": larger than 1 MiB; not a PEM certificate or key"));
  }
  return text;
}

BioPtr MemoryBio(const std::string& text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

absl::Time AsnTime(const ASN1_TIME* time) {
  struct tm parts;
  std::memset(&parts, 0, sizeof(parts));
  if (time == nullptr || ASN1_TIME_to_tm(time, &parts) != 1) return absl::InfinitePast();
  return absl::FromTimeT(timegm(&parts));
}

CertificateInfo InfoOf(X509* cert) {
  CertificateInfo info;
  X509_NAME* subject = X509_get_subject_name(cert);
  if (subject != nullptr) {
    BioPtr out(BIO_new(BIO_s_mem()));
    X509_NAME_print_ex(out.get(), subject, 0, XN_FLAG_ONELINE & ~ASN1_STRFLGS_ESC_MSB);
    char* data = nullptr;
    const long length = BIO_get_mem_data(out.get(), &data);
    if (length > 0) info.subject.assign(data, static_cast<size_t>(length));
  }
  std::unique_ptr<GENERAL_NAMES, GeneralNamesFree> sans(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  if (sans != nullptr) {
    for (int i = 0; i < sk_GENERAL_NAME_num(sans.get()); ++i) {
      const GENERAL_NAME* name = sk_GENERAL_NAME_value(sans.get(), i);
      if (name->type == GEN_DNS) {
        const ASN1_STRING* dns = name->d.dNSName;
        info.names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)),
                                static_cast<size_t>(ASN1_STRING_length(dns)));
      } else if (name->type == GEN_IPADD) {
        const ASN1_OCTET_STRING* ip = name->d.iPAddress;
        char text[INET6_ADDRSTRLEN] = {0};
        const int length = ASN1_STRING_length(ip);
        const int family = length == 4 ? AF_INET : length == 16 ? AF_INET6 : 0;
        if (family != 0 && inet_ntop(family, ASN1_STRING_get0_data(ip), text, sizeof(text))) {
          info.names.emplace_back(text);
        }
      }
    }
  }
  if (subject != nullptr) {
    const int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
    if (index >= 0) {
      const ASN1_STRING* cn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
      unsigned char* utf8 = nullptr;
      const int length = ASN1_STRING_to_UTF8(&utf8, cn);
      if (length >= 0) {
        info.names.emplace_back(reinterpret_cast<const char*>(utf8), static_cast<size_t>(length));
        OPENSSL_free(utf8);
      }
    }
  }
  info.not_before = AsnTime(X509_get0_notBefore(cert));
  info.not_after = AsnTime(X509_get0_notAfter(cert));
  return info;
}

absl::StatusOr<X509Ptr> ParseCertificate(const FlagFile& file, const std::string& text) {
  BioPtr bio = MemoryBio(text);
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(Named(file), ": holds no PEM certificate (-----BEGIN CERTIFICATE-----)"));
  }
  return cert;
}

unsigned int RefreshSeconds(absl::Duration interval) {
  const int64_t seconds = absl::ToInt64Seconds(interval);
  return seconds < 1 ? 1u : static_cast<unsigned int>(seconds);
}

}  // namespace

std::string CertificateInfo::Describe() const {
  return absl::StrCat(names.empty() ? subject : absl::StrJoin(names, ", "), " (valid until ",
                      absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", not_after, absl::UTCTimeZone()),
                      ")");
}

bool CertificateInfo::Names(const std::string& name) const {
  for (const std::string& n : names) {
    if (n == name) return true;
  }
  return false;
}

absl::StatusOr<CertificateInfo> ReadCertificateFile(const FlagFile& file) {
  absl::StatusOr<std::string> text = ReadPemFile(file);
  if (!text.ok()) return text.status();
  absl::StatusOr<X509Ptr> cert = ParseCertificate(file, *text);
  if (!cert.ok()) return cert.status();
  return InfoOf(cert->get());
}

absl::StatusOr<CertificateInfo> CheckKeyPair(const FlagFile& cert, const FlagFile& key,
                                             const std::string& expected_identity,
                                             absl::Time now) {
  absl::StatusOr<std::string> cert_text = ReadPemFile(cert);
  if (!cert_text.ok()) return cert_text.status();
  absl::StatusOr<X509Ptr> x509 = ParseCertificate(cert, *cert_text);
  if (!x509.ok()) return x509.status();
  absl::StatusOr<std::string> key_text = ReadPemFile(key);
  if (!key_text.ok()) return key_text.status();
  BioPtr bio = MemoryBio(*key_text);
  PkeyPtr pkey(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (pkey == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        Named(key), ": holds no unencrypted PEM private key (-----BEGIN PRIVATE KEY-----)"));
  }
  if (X509_check_private_key(x509->get(), pkey.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(Named(key), " is not the key of the ",
                                                   "certificate in ", Named(cert)));
  }
  CertificateInfo info = InfoOf(x509->get());
  if (now < info.not_before || now > info.not_after) {
    return absl::InvalidArgumentError(absl::StrCat(
        Named(cert), ": the certificate is valid only from ",
        absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", info.not_before, absl::UTCTimeZone()), " to ",
        absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", info.not_after, absl::UTCTimeZone())));
  }
  if (!expected_identity.empty() && !info.Names(expected_identity)) {
    return absl::InvalidArgumentError(absl::StrCat(
        Named(cert), ": the certificate names ", absl::StrJoin(info.names, ", "),
        ", not this process's cluster identity '", expected_identity, "'"));
  }
  return info;
}

absl::StatusOr<int> CheckCaFile(const FlagFile& ca) {
  absl::StatusOr<std::string> text = ReadPemFile(ca);
  if (!text.ok()) return text.status();
  BioPtr bio = MemoryBio(*text);
  int count = 0;
  while (true) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (cert == nullptr) break;
    ++count;
  }
  ERR_clear_error();
  if (count == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(Named(ca), ": holds no PEM CA certificate (-----BEGIN CERTIFICATE-----)"));
  }
  return count;
}

absl::StatusOr<ServerTls> MakeServerCredentials(const ServerTlsOptions& options) {
  absl::StatusOr<CertificateInfo> info =
      CheckKeyPair(options.cert, options.key, options.expected_identity);
  if (!info.ok()) return info.status();
  const bool verify_clients = options.client_certs != ClientCertMode::kNone;
  if (verify_clients) {
    if (options.ca.path.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          options.ca.flag, " is needed to verify client certificates (the cluster CA)"));
    }
    if (absl::StatusOr<int> cas = CheckCaFile(options.ca); !cas.ok()) return cas.status();
  }
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      options.key.path, options.cert.path, verify_clients ? options.ca.path : "",
      RefreshSeconds(options.refresh_interval));
  grpc::experimental::TlsServerCredentialsOptions tls(provider);
  tls.watch_identity_key_cert_pairs();
  if (verify_clients) tls.watch_root_certs();
  switch (options.client_certs) {
    case ClientCertMode::kNone:
      tls.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
      break;
    case ClientCertMode::kVerifyIfOffered:
      tls.set_cert_request_type(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
      break;
    case ClientCertMode::kRequire:
      tls.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
      break;
  }
  ServerTls result;
  result.credentials = grpc::experimental::TlsServerCredentials(tls);
  result.certificate = *std::move(info);
  if (result.credentials == nullptr) {
    return absl::InternalError("gRPC refused the TLS server credentials options");
  }
  return result;
}

ChannelSecurity::ChannelSecurity() : credentials_(grpc::InsecureChannelCredentials()) {}

ChannelSecurity::ChannelSecurity(std::shared_ptr<grpc::ChannelCredentials> credentials,
                                 std::string server_name)
    : credentials_(std::move(credentials)), server_name_(std::move(server_name)), tls_(true) {}

void ChannelSecurity::AddTo(grpc::ChannelArguments* arguments) const {
  if (tls_ && !server_name_.empty()) {
    arguments->SetString(GRPC_SSL_TARGET_NAME_OVERRIDE_ARG, server_name_);
  }
}

std::shared_ptr<grpc::Channel> ChannelSecurity::CreateChannel(
    const std::string& address, grpc::ChannelArguments arguments) const {
  AddTo(&arguments);
  return grpc::CreateCustomChannel(address, credentials_, arguments);
}

absl::StatusOr<ChannelSecurity> MakeChannelCredentials(const ChannelTlsOptions& options) {
  if (options.ca.path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.ca.flag, " is needed for TLS (the CA that signed the server's "
                                      "certificate)"));
  }
  if (options.cert.path.empty() != options.key.path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(options.cert.flag, " and ", options.key.flag,
                                                   " go together: give both or neither"));
  }
  if (absl::StatusOr<int> cas = CheckCaFile(options.ca); !cas.ok()) return cas.status();
  const bool identity = !options.cert.path.empty();
  if (identity) {
    absl::StatusOr<CertificateInfo> info =
        CheckKeyPair(options.cert, options.key, options.expected_identity);
    if (!info.ok()) return info.status();
  }
  const unsigned int refresh = RefreshSeconds(options.refresh_interval);
  std::shared_ptr<grpc::experimental::CertificateProviderInterface> provider =
      identity ? std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
                     options.key.path, options.cert.path, options.ca.path, refresh)
               : std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
                     options.ca.path, refresh);
  grpc::experimental::TlsChannelCredentialsOptions tls;
  tls.set_certificate_provider(provider);
  tls.watch_root_certs();
  if (identity) tls.watch_identity_key_cert_pairs();
  // Chain verification against the CA plus the name check (server_name or the host dialled).
  tls.set_certificate_verifier(
      std::make_shared<grpc::experimental::HostNameCertificateVerifier>());
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::experimental::TlsCredentials(tls);
  if (credentials == nullptr) {
    return absl::InternalError("gRPC refused the TLS channel credentials options");
  }
  return ChannelSecurity(std::move(credentials), options.server_name);
}

}  // namespace graphopt
