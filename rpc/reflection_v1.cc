#include "rpc/reflection_v1.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <set>

namespace arbor::rpc {
namespace {

using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptor;
using grpc::reflection::v1::ServerReflectionRequest;
using grpc::reflection::v1::ServerReflectionResponse;

void Error(grpc::StatusCode code, const std::string& message, ServerReflectionResponse& out) {
  out.mutable_error_response()->set_error_code(static_cast<int32_t>(code));
  out.mutable_error_response()->set_error_message(message);
}

// `file` and, after it, the files it depends on (transitively) that `sent` does not hold yet.
void AddFile(const FileDescriptor* file, std::set<std::string>& sent,
             ServerReflectionResponse& out) {
  std::vector<const FileDescriptor*> pending = {file};
  auto* files = out.mutable_file_descriptor_response();
  for (size_t i = 0; i < pending.size(); ++i) {
    const FileDescriptor* f = pending[i];
    // The file asked for is always answered; a dependency only once per stream.
    if (!sent.insert(f->name()).second && i > 0) continue;
    google::protobuf::FileDescriptorProto proto;
    f->CopyTo(&proto);
    files->add_file_descriptor_proto(proto.SerializeAsString());
    for (int d = 0; d < f->dependency_count(); ++d) pending.push_back(f->dependency(d));
  }
}

void Answer(const ServerReflectionRequest& request, const std::vector<std::string>& services,
            std::set<std::string>& sent, ServerReflectionResponse& out) {
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  switch (request.message_request_case()) {
    case ServerReflectionRequest::kListServices:
      for (const std::string& name : services) {
        out.mutable_list_services_response()->add_service()->set_name(name);
      }
      return;
    case ServerReflectionRequest::kFileByFilename:
      if (const FileDescriptor* f = pool->FindFileByName(request.file_by_filename())) {
        return AddFile(f, sent, out);
      }
      return Error(grpc::StatusCode::NOT_FOUND, "unknown file " + request.file_by_filename(), out);
    case ServerReflectionRequest::kFileContainingSymbol:
      if (const FileDescriptor* f =
              pool->FindFileContainingSymbol(request.file_containing_symbol())) {
        return AddFile(f, sent, out);
      }
      return Error(grpc::StatusCode::NOT_FOUND,
                   "unknown symbol " + request.file_containing_symbol(), out);
    case ServerReflectionRequest::kFileContainingExtension: {
      const auto& ask = request.file_containing_extension();
      const auto* type = pool->FindMessageTypeByName(ask.containing_type());
      const auto* extension =
          type != nullptr ? pool->FindExtensionByNumber(type, ask.extension_number()) : nullptr;
      if (extension != nullptr) return AddFile(extension->file(), sent, out);
      return Error(grpc::StatusCode::NOT_FOUND, "unknown extension of " + ask.containing_type(),
                   out);
    }
    case ServerReflectionRequest::kAllExtensionNumbersOfType: {
      const auto* type = pool->FindMessageTypeByName(request.all_extension_numbers_of_type());
      if (type == nullptr) {
        return Error(grpc::StatusCode::NOT_FOUND,
                     "unknown type " + request.all_extension_numbers_of_type(), out);
      }
      std::vector<const google::protobuf::FieldDescriptor*> extensions;
      pool->FindAllExtensions(type, &extensions);
      auto* numbers = out.mutable_all_extension_numbers_response();
      numbers->set_base_type_name(type->full_name());
      for (const auto* e : extensions) numbers->add_extension_number(e->number());
      return;
    }
    case ServerReflectionRequest::MESSAGE_REQUEST_NOT_SET:
      return Error(grpc::StatusCode::INVALID_ARGUMENT, "the request asks for nothing", out);
  }
}

}  // namespace

grpc::Status ReflectionV1::ServerReflectionInfo(
    grpc::ServerContext*,
    grpc::ServerReaderWriter<ServerReflectionResponse, ServerReflectionRequest>* stream) {
  std::set<std::string> sent;  // Files this stream has carried, so dependencies go once.
  ServerReflectionRequest request;
  while (stream->Read(&request)) {
    ServerReflectionResponse response;
    response.set_valid_host(request.host());
    *response.mutable_original_request() = request;
    Answer(request, *services_, sent, response);
    if (!stream->Write(response)) break;
  }
  return grpc::Status::OK;
}

}  // namespace arbor::rpc
