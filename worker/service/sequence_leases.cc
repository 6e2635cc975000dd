#include "worker/service/sequence_leases.h"

#include <vector>

#include "base/log_fields.h"

namespace arbor::worker {

SequenceLeases::SequenceLeases(absl::Duration lease, ReleaseOwner release)
    : lease_(lease), release_(std::move(release)) {
  thread_ = std::thread([this] {
    while (!stop_.WaitForNotificationWithTimeout(lease_ / 4)) ExpireAt(absl::Now());
  });
}

SequenceLeases::~SequenceLeases() {
  stop_.Notify();
  thread_.join();
}

void SequenceLeases::Renew(uint64_t epoch) {
  if (epoch == 0) return;
  absl::MutexLock lock(&mu_);
  renewed_[epoch] = absl::Now();
}

void SequenceLeases::Revoke(uint64_t epoch) {
  if (epoch == 0) return;
  {
    absl::MutexLock lock(&mu_);
    renewed_.erase(epoch);
  }
  base::WithFields({{"event", "lease_revoked"}, {"owner_epoch", epoch}})
      .Info("coordinator epoch {} was replaced: releasing its sequences", epoch);
  release_(epoch);
}

void SequenceLeases::ExpireAt(absl::Time now) {
  std::vector<uint64_t> lapsed;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = renewed_.begin(); it != renewed_.end();) {
      if (now - it->second > lease_) {
        lapsed.push_back(it->first);
        renewed_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  for (uint64_t epoch : lapsed) {
    base::WithFields({{"event", "lease_expired"}, {"owner_epoch", epoch}})
        .Warn("coordinator epoch {} silent for over {}: releasing its sequences", epoch,
              absl::FormatDuration(lease_));
    release_(epoch);
  }
}

}  // namespace arbor::worker
