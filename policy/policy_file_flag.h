// The server's default policy file on the command line (--policy_file): defined once, for
// arbor-coordinator and arbor-worker, which lay it over their built-in default policy alike.
// (`arbor generate`'s --policy_file, the request's own policy, is another flag of the CLI.)
#ifndef ARBOR_POLICY_POLICY_FILE_FLAG_H_
#define ARBOR_POLICY_POLICY_FILE_FLAG_H_

#include <string>

namespace arbor::policy {

// The file as given (policy_file.h reads it); empty: none.
std::string DefaultPolicyFileFromFlags();

}  // namespace arbor::policy

#endif  // ARBOR_POLICY_POLICY_FILE_FLAG_H_
