! Numerical integration of a function over an interval.
module integrate
  implicit none
contains
  ! Composite trapezoid rule with n panels.
  function trapezoid(f, a, b, n) result(total)
    interface
      real function f(x)
        real, intent(in) :: x
      end function f
    end interface
    real, intent(in) :: a, b
    integer, intent(in) :: n
    real :: total, h
    integer :: i
    h = (b - a) / n
    total = 0.5 * (f(a) + f(b))
    do i = 1, n - 1
      total = total + f(a + i * h)
    end do
    total = total * h
  end function trapezoid
end module integrate
