! Descriptive statistics of a sample.
module stats
  implicit none
contains
  ! Sample mean and standard deviation in one pass (Welford).
  subroutine mean_stddev(x, n, mean, stddev)
    integer, intent(in) :: n
    real, intent(in) :: x(n)
    real, intent(out) :: mean, stddev
    real :: m2, delta
    integer :: i
    mean = 0.0
    m2 = 0.0
    do i = 1, n
      delta = x(i) - mean
      mean = mean + delta / i
      m2 = m2 + delta * (x(i) - mean)
    end do
    stddev = sqrt(m2 / (n - 1))
  end subroutine mean_stddev
end module stats
