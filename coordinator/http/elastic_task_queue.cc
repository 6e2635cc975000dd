#include "coordinator/http/elastic_task_queue.h"

#include <utility>

namespace arbor::coordinator::http {

ElasticTaskQueue::ElasticTaskQueue(int base, int max, absl::Duration idle)
    : base_(base), max_(max < base ? base : max), idle_(idle) {
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < base_; ++i) Start();
}

ElasticTaskQueue::~ElasticTaskQueue() { shutdown(); }

void ElasticTaskQueue::Start() {
  const bool extra = static_cast<int>(threads_.size()) >= base_;
  std::thread thread([this, extra] { Work(extra); });
  const std::thread::id id = thread.get_id();
  threads_.emplace(id, std::move(thread));
}

void ElasticTaskQueue::enqueue(std::function<void()> fn) {
  JoinEnded();
  absl::MutexLock lock(&mu_);
  jobs_.push_back(std::move(fn));
  // Every idle thread will take a job; a job beyond them gets a thread of its own.
  if (static_cast<int>(jobs_.size()) > waiting_ && static_cast<int>(threads_.size()) < max_) {
    Start();
  }
}

void ElasticTaskQueue::Work(bool extra) {
  for (;;) {
    std::function<void()> job;
    {
      absl::MutexLock lock(&mu_);
      ++waiting_;
      const auto ready = [this] { return shutdown_ || !jobs_.empty(); };
      const bool woke = extra ? mu_.AwaitWithTimeout(absl::Condition(&ready), idle_)
                              : (mu_.Await(absl::Condition(&ready)), true);
      --waiting_;
      if (jobs_.empty() && (shutdown_ || !woke)) {
        // Ends: another thread joins it (shutdown joins the rest itself).
        if (!shutdown_) {
          auto self = threads_.find(std::this_thread::get_id());
          ended_.push_back(std::move(self->second));
          threads_.erase(self);
        }
        return;
      }
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

void ElasticTaskQueue::JoinEnded() {
  std::vector<std::thread> ended;
  {
    absl::MutexLock lock(&mu_);
    ended.swap(ended_);
  }
  for (std::thread& thread : ended) thread.join();
}

void ElasticTaskQueue::shutdown() {
  std::map<std::thread::id, std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return;
    shutdown_ = true;
    threads.swap(threads_);
  }
  for (auto& [id, thread] : threads) thread.join();
  JoinEnded();
}

int ElasticTaskQueue::threads() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(threads_.size());
}

}  // namespace arbor::coordinator::http
