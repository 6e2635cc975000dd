// The HTTP gateway's connection threads (httplib's TaskQueue). httplib serves a connection on
// one thread from accept to close, reading its request headers with a time limit per read but
// none per request, so a client that sends one header byte a second (slowloris) holds a thread
// for as long as it likes. With a fixed pool, as many such clients as threads starve every other
// caller, /health included. This queue keeps `base` threads and starts another whenever a
// connection finds them all busy, up to `max`, so slow clients take threads of their own rather
// than everyone's; a thread beyond `base` ends after `idle` without work.
#ifndef ARBOR_COORDINATOR_HTTP_ELASTIC_TASK_QUEUE_H_
#define ARBOR_COORDINATOR_HTTP_ELASTIC_TASK_QUEUE_H_

#include <deque>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "httplib.h"

namespace arbor::coordinator::http {

class ElasticTaskQueue final : public httplib::TaskQueue {
 public:
  // 1 <= base <= max.
  ElasticTaskQueue(int base, int max, absl::Duration idle = absl::Seconds(10));
  ~ElasticTaskQueue() override;

  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then stops and joins every thread.
  void shutdown() override;

  int threads() const;  // Started and not ended.

 private:
  void Start() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Work(bool extra);
  // Joins the threads that ended (a thread cannot join itself).
  void JoinEnded() ABSL_LOCKS_EXCLUDED(mu_);

  const int base_;
  const int max_;
  const absl::Duration idle_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<std::thread::id, std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> ended_ ABSL_GUARDED_BY(mu_);
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;  // Threads idle, waiting for a job.
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_ELASTIC_TASK_QUEUE_H_
